import { z } from 'zod'
import type { Database } from '../core/database.js'
import { BYTES_A_WORKER, MAX_INSPECT_WORKERS } from '../core/defaults.js'
import { counted } from '../core/format.js'
import { connectionOptionsSchema, parseOptions, sessionLimits } from '../core/options.js'
import { MIB } from '../core/units.js'
import { formatLsn, parseLsn } from '../decode/reader.js'
import { withSession } from '../driver/open.js'
import { planArchive } from '../wal/archive.js'
import { type ArchiveProgress, type ArchiveReading, readArchive } from '../wal/read-archive.js'
import type { ObservedRelation, WalObservation } from './observation.js'
import { checkpointNote } from './observe.js'
import { nameFiles, type RelationCatalog, readRelationCatalog } from './observe-names.js'

const lsnSchema = z
  .string()
  .regex(/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/, 'expected an LSN as PostgreSQL prints it, e.g. 0/16B3748')

/**
 * Options of {@link inspectWal}: the files (or a folder), the range, and a server to name relations by.
 *
 * @example
 * const options: InspectOptions = { dir: '/var/lib/pgbackrest/archive/main/16-1/0000000100000001', db: process.env.DATABASE_URL }
 */
export const inspectOptionsSchema = z
  .strictObject({
    ...connectionOptionsSchema.shape,
    files: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('WAL segment files and folders of them (every folder below each walked), in any order.'),
    dir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A folder of WAL segments, walked to the bottom: an archive (a pgBackRest or barman repository, a WAL-G or archive_command folder), or a copy of pg_wal.',
      ),
    db: connectionOptionsSchema.shape.db.describe(
      "A server whose catalog names the relfilenodes (each database's, through a connection string). Omitted: relations are listed by database and relfilenode.",
    ),
    from: lsnSchema.optional().describe('Only the records that start at or after this LSN.'),
    to: lsnSchema.optional().describe('Only the records that start before this LSN.'),
    parallel: z
      .number()
      .int()
      .min(1)
      .max(64)
      .optional()
      .describe(
        `Worker threads that read stretches of segments at once; 1 reads in this thread. Default: one for each ${BYTES_A_WORKER / MIB} MB of WAL, up to the machine's cores (at most ${MAX_INSPECT_WORKERS}).`,
      ),
    skipBad: z
      .boolean()
      .default(false)
      .describe('A file that does not read is reported and left out (a gap) instead of failing the whole reading.'),
    onProgress: z
      .custom<(progress: ArchiveProgress) => void>((value) => typeof value === 'function', {
        message: 'expected a function',
      })
      .optional()
      .describe('Called after each segment file with the files and bytes read so far.'),
  })
  .superRefine((options, context) => {
    if ((options.files === undefined) === (options.dir === undefined))
      context.addIssue({
        code: 'custom',
        path: [options.files === undefined ? 'files' : 'dir'],
        message: 'give the WAL as exactly one of files (segment files and folders) or dir (a folder)',
      })
    if (options.from !== undefined && options.to !== undefined && parseLsn(options.from) >= parseLsn(options.to))
      context.addIssue({ code: 'custom', path: ['to'], message: `${options.to} is not after from ${options.from}` })
  })

export type InspectOptions = z.input<typeof inspectOptionsSchema>
type ParsedInspectOptions = z.output<typeof inspectOptionsSchema>

/** inspectWal without the notebook display; the exported entry point is in api.ts. */
export async function inspectWal(options: InspectOptions): Promise<WalObservation<'files'>> {
  const parsed = parseOptions(inspectOptionsSchema, options)
  const from = parsed.from === undefined ? null : parseLsn(parsed.from)
  const to = parsed.to === undefined ? null : parseLsn(parsed.to)
  const plan = await planArchive(parsed.files ?? [parsed.dir as string], {
    skipBad: parsed.skipBad,
    ...(from === null ? {} : { from }),
    ...(to === null ? {} : { to }),
  })
  const reading = await readArchive(plan, {
    from,
    to,
    skipBad: parsed.skipBad,
    parallel: parsed.parallel,
    signal: parsed.signal,
    onProgress: parsed.onProgress,
  })
  const databases = [...new Set(reading.wal.files.map((file) => file.database))]
  const catalog = parsed.db === undefined ? null : await catalogOf(parsed, parsed.db, databases)
  const empty: RelationCatalog = { files: new Map(), databases: new Map(), database: 0 }
  const relations = nameFiles(reading.wal.files, catalog ?? empty, catalog ?? empty)
  return {
    kind: 'wal-observation',
    window: {
      startLsn: formatLsn(reading.startLsn ?? 0),
      endLsn: formatLsn(reading.endLsn ?? 0),
      bytes: reading.bytes,
      records: reading.wal.records,
      fpiCount: reading.wal.fpiCount,
      durationMs: null,
      statWal: null,
    },
    relations,
    fpiReasons: reading.wal.fpiReasons,
    transactions: reading.wal.transactions,
    unattributed: reading.wal.unattributed,
    attribution: 'wal',
    walSource: 'files',
    attributionNote: null,
    statements: null,
    notes: inspectionNotes(reading, relations, catalog, parsed.db),
    partial: false,
    server: null,
    files: {
      major: plan.major,
      blockSize: plan.blockSize,
      segmentSize: plan.segmentSize,
      read: reading.filesRead,
      timeline: plan.timeline,
      switches: plan.switches.map((entry) => ({ parent: entry.parent, switchLsn: formatLsn(entry.switchLsn) })),
      gaps: reading.gaps,
      skipped: plan.skipped,
      bad: reading.bad,
      endOfWal: reading.endOfWal,
      unfinished: reading.unfinished,
    },
  }
}

/**
 * The catalogs that name the files: the connected database's and the shared catalogs, and through
 * a connection string each other database the WAL touched (a relfilenode means something only in
 * its own database).
 */
async function catalogOf(
  options: ParsedInspectOptions,
  db: Database,
  databases: readonly number[],
): Promise<RelationCatalog & { unreachable: string[] }> {
  const limits = sessionLimits(options)
  const connected = await withSession(db, limits, options.signal, 'naming relations', readRelationCatalog)
  const merged = { ...connected, files: new Map(connected.files), unreachable: [] as string[] }
  for (const oid of databases) {
    const name = connected.databases.get(oid)
    if (oid === 0 || oid === connected.database || name === undefined) continue
    if (typeof db !== 'string') {
      merged.unreachable.push(name)
      continue
    }
    const url = new URL(db)
    url.pathname = `/${encodeURIComponent(name)}`
    const other = await withSession(
      url.toString(),
      limits,
      options.signal,
      'naming relations',
      readRelationCatalog,
    ).catch(() => null)
    if (!other) {
      merged.unreachable.push(name)
      continue
    }
    for (const [key, relation] of other.files) if (!merged.files.has(key)) merged.files.set(key, relation)
  }
  return merged
}

function inspectionNotes(
  reading: ArchiveReading,
  relations: readonly ObservedRelation[],
  catalog: (RelationCatalog & { unreachable: string[] }) | null,
  db: Database | undefined,
): string[] {
  const notes: string[] = []
  const checkpoint = checkpointNote(reading.wal)
  if (checkpoint) notes.push(checkpoint)
  for (const gap of reading.gaps)
    notes.push(
      `WAL from ${gap.fromLsn} to ${gap.toLsn} is missing (${gap.missing.join(', ') || 'files left out'}): it is not in the totals.`,
    )
  for (const file of reading.bad)
    notes.push(`${file.name} was left out (skipBad)${file.lsn === null ? '' : ` at ${file.lsn}`}: ${file.reason}.`)
  if (reading.endOfWal)
    notes.push(
      `The WAL ends at ${reading.endOfWal.lsn} in ${reading.endOfWal.file}: from there on the file holds zeros or older WAL, not written yet (the segment the server was writing, or one it created ahead).`,
    )
  if (reading.unfinished)
    notes.push(
      `The record at ${reading.unfinished.lsn} begins in ${reading.unfinished.file} and goes on past it: it is not counted; add the next segment to count it.`,
    )
  const unnamed = relations.filter((relation) => relation.name === null).length
  if (db === undefined)
    notes.push(
      'Relations are listed by database OID and relfilenode: give a server (--url, or db) to name them from its catalog.',
    )
  else if (unnamed > 0)
    notes.push(
      `${counted(unnamed, 'relation file')} ${unnamed === 1 ? 'is' : 'are'} in no catalog today (dropped, rewritten or truncated since the WAL was written${catalog && catalog.unreachable.length > 0 ? `, or in a database walcost could not connect to: ${catalog.unreachable.join(', ')}` : ''}): listed by relfilenode, unknown today.`,
    )
  return notes
}
