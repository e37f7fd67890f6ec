import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { DEFAULT_AUDIT_COUNT, DEFAULT_SAMPLE_ROWS } from '../defaults.js'
import { rolledBack } from '../driver/rolled-back.js'
import { judge, minStatsAgeDaysSchema, readIndexUsage, readStatsAge, type IndexUsage, type IndexVerdict } from './index-usage.js'
import type { Session } from '../driver/types.js'
import { WalcostError, fromServerError, throwIfAborted } from '../errors.js'
import { batchOptionsSchema, parseOptions, replayableRows } from '../options.js'
import { readServer } from '../wal/server.js'
import { measureOnSession, onDatabase } from './measure.js'
import type { InsertCost, Skipped } from './result.js'
import { compareOnSession, firstRunOf, type Decomposition } from './scenarios.js'
import { quoteIdent, resolveTable, type Index, type Table } from './table.js'

/**
 * Options of {@link auditIndexes}. The batch is `count` synthetic rows (default 10,000) shaped like
 * the sample, or `rows`.
 *
 * @example
 * const options: AuditOptions = { db: process.env.DATABASE_URL, table: 'device_metrics', rowsPerSec: 50_000 }
 */
export const auditOptionsSchema = batchOptionsSchema
  .omit({ sql: true })
  .extend({
    sampleRows: z.number().int().min(0).max(10_000_000).default(DEFAULT_SAMPLE_ROWS).describe('Real rows copied into the scratch table before measuring (0: an empty copy).'),
    minStatsAgeDays: minStatsAgeDaysSchema,
    rowsPerSec: z.number().positive().optional().describe('The table\'s ingest rate, to say what the drop candidates cost in MB/s and GB/day.'),
  })
  .superRefine((options, context) => {
    if (options.rows !== undefined && options.count !== undefined) {
      context.addIssue({ code: 'custom', path: ['count'], message: 'give the batch as rows or count, not both' })
    }
  })
  .superRefine(replayableRows('the audit\'s scenarios'))
  .transform((options) => ({ ...options, count: options.rows === undefined ? options.count ?? DEFAULT_AUDIT_COUNT : undefined }))

export type AuditOptions = z.input<typeof auditOptionsSchema>
type ParsedAuditOptions = z.output<typeof auditOptionsSchema>

export interface IndexAudit {
  name: string
  definition: string
  /** WAL per inserted row right after a checkpoint: records and their full-page images. */
  walBytesPerRow: number
  /** WAL per row in steady state (pages already dirty): records only, mostly. */
  steadyBytesPerRow: number
  recordsPerRow: number
  /** Share of the index's after-checkpoint WAL that is full-page images. */
  fpiShare: number
  sizeBytes: number
  /** Scans since statsSince (pg_stat_user_indexes.idx_scan). */
  idxScan: number
  /** What the index backs: 'primary key', 'unique', 'exclusion', 'foreign key lookup', 'replica identity', or null. */
  backsConstraint: string | null
  verdict: IndexVerdict
  reason: string
}

export interface IndexAuditResult {
  table: string
  /** Real rows copied into the scratch table, and how many were asked for. */
  sample: { rows: number; requested: number }
  /** Since when the usage counters have accumulated (ISO), and for how many days. */
  statsSince: string
  statsAgeDays: number
  indexes: IndexAudit[]
  /** WAL per row after a checkpoint with every index, and without the drop candidates (null: none). */
  bytesPerRow: number
  bytesPerRowWithoutDropCandidates: number | null
  /** What the drop candidates cost at `rowsPerSec`, when it was given (MB = 10^6 bytes). */
  atRate: { rowsPerSec: number; walMBps: number; walMBpsWithoutDropCandidates: number; savedGBPerDay: number } | null
  decomposition: Decomposition
  /** The measurements on the scratch copy. */
  scenarios: Record<string, InsertCost>
  skipped: Skipped[]
}

/**
 * What each index costs on the write path against what it is worth on the read path. The cost is
 * measured on a scratch copy of the table (same columns, defaults, constraints and indexes, filled
 * with a sample of the real rows) created inside a transaction that is rolled back: the real table
 * is only read, under ACCESS SHARE bounded by lockTimeoutMs, and a crash or a killed connection
 * leaves nothing behind.
 *
 * @example
 * const audit = await auditIndexes({ db: process.env.DATABASE_URL, table: 'device_metrics', rowsPerSec: 50_000 })
 * for (const index of audit.indexes) console.log(index.name, index.verdict, index.reason)
 */
export async function auditIndexes(options: AuditOptions): Promise<IndexAuditResult> {
  const parsed = parseOptions(auditOptionsSchema, options)
  return onDatabase(parsed, (session) => auditOnSession(session, parsed))
}

async function auditOnSession(session: Session, options: ParsedAuditOptions): Promise<IndexAuditResult> {
  const server = await readServer(session)
  const table = await resolveTable(session, options.table)
  const usage = await readIndexUsage(session, table)
  const { statsSince, statsAgeDays } = await readStatsAge(session)
  throwIfAborted(options.signal)
  return rolledBack(session, 'transaction', async () => {
    const scratch = await createScratchCopy(session, table)
    const sampled = await fillScratchCopy(session, table, scratch, options.sampleRows)
    const scratchTable = await resolveTable(session, scratch)
    const scratchIndex = matchIndexes(table.indexes, scratchTable.indexes)
    const byAttribution = server.capabilities.readWal || 'schema' in server.capabilities.walinspect
    const scratchOptions = { ...options, table: scratch, sql: undefined, perIndex: !byAttribution }
    const realName = new Map(table.indexes.map((index) => [scratchIndex.get(index.oid)!, index.name]))
    const comparison = await compareOnSession(session, scratchOptions, { enclosing: 'savepoint' })
    const scenarios = Object.fromEntries(Object.entries(comparison.scenarios).map(([name, cost]) =>
      [name.startsWith('without:') ? `without:${realName.get(name.slice('without:'.length))}` : name, withRealNames(cost, realName)]))
    const indexes = table.indexes.map((index) => auditIndex(index, usage, scenarios, statsAgeDays, options.minStatsAgeDays))
    const candidates = indexes.filter((index) => index.verdict === 'drop-candidate')
    if (candidates.length > 0) {
      const dropped = candidates.map((index) => scratchIndex.get(table.indexes.find((candidate) => candidate.name === index.name)!.oid)!)
      scenarios['without-drop-candidates'] = withRealNames(await measureOnSession(session, { ...scratchOptions, checkpoint: true, dropIndexes: dropped }, { enclosing: 'savepoint' }), realName)
    }
    const bytesPerRow = firstRunOf(scenarios)!.bytesPerRow ?? 0
    const withoutCandidates = scenarios['without-drop-candidates']?.bytesPerRow ?? null
    return {
      table: table.quoted,
      sample: { rows: sampled, requested: options.sampleRows },
      statsSince,
      statsAgeDays,
      indexes,
      bytesPerRow,
      bytesPerRowWithoutDropCandidates: withoutCandidates,
      atRate: options.rowsPerSec === undefined ? null : {
        rowsPerSec: options.rowsPerSec,
        walMBps: (bytesPerRow * options.rowsPerSec) / 1e6,
        walMBpsWithoutDropCandidates: ((withoutCandidates ?? bytesPerRow) * options.rowsPerSec) / 1e6,
        savedGBPerDay: ((bytesPerRow - (withoutCandidates ?? bytesPerRow)) * options.rowsPerSec * 86_400) / 1e9,
      },
      decomposition: { ...comparison.decomposition, parts: comparison.decomposition.parts.map((part) => ({ ...part, name: realName.get(part.name) ?? part.name })) },
      scenarios,
      skipped: firstRunOf(scenarios)!.skipped,
    }
  })
}

/**
 * CREATE TABLE ... (LIKE ... INCLUDING ALL) in the real table's schema, plus what LIKE leaves out and
 * that changes what an insert writes: unlogged-ness, storage parameters (fillfactor), and defaults
 * drawing from the real table's sequences, which would advance them.
 */
async function createScratchCopy(session: Session, table: Table): Promise<string> {
  const name = `walcost_scratch_${randomBytes(4).toString('hex')}`
  const scratch = `${quoteIdent(table.schema)}.${quoteIdent(name)}`
  const [source] = await session.query<{ unlogged: boolean; options: string[] | null }>(
    `select relpersistence = 'u' as unlogged, reloptions as options from pg_class where oid = $1::oid`, [table.oid])
  try {
    await session.exec(`create ${source?.unlogged ? 'unlogged ' : ''}table ${scratch} (like ${table.quoted} including all)`)
  } catch (error) {
    const failure = fromServerError(error, `creating a scratch copy of ${table.quoted} (inside a transaction that is rolled back)`)
    if (failure.code === 'PERMISSION_DENIED') {
      throw new WalcostError('PERMISSION_DENIED', `the audit measures on a scratch copy created in schema ${quoteIdent(table.schema)} and removed by a rollback: GRANT CREATE ON SCHEMA ${quoteIdent(table.schema)} TO the role.`, { cause: error })
    }
    throw failure
  }
  for (const option of source?.options ?? []) {
    const [key, value] = option.split(/=(.*)/s)
    await session.exec(`alter table ${scratch} set (${quoteIdent(key ?? '')} = ${quoteLiteral(value ?? '')})`)
  }
  const sequenced = await session.query<{ column: string }>(
    `select a.attname as column from pg_attrdef d join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
      where d.adrelid = $1::regclass and pg_get_expr(d.adbin, d.adrelid) like 'nextval(%'`, [scratch])
  for (const [i, { column }] of sequenced.entries()) {
    const sequence = `${quoteIdent(table.schema)}.${quoteIdent(`${name}_seq${i}`)}`
    await session.exec(`create sequence ${sequence} owned by ${scratch}.${quoteIdent(column)};
      alter table ${scratch} alter column ${quoteIdent(column)} set default nextval(${quoteLiteral(sequence)})`)
  }
  return scratch
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`
}

/** Copies up to `sampleRows` real rows (whole pages, spread over the table) into the scratch copy. */
async function fillScratchCopy(session: Session, table: Table, scratch: string, sampleRows: number): Promise<number> {
  if (sampleRows > 0) {
    const columns = await session.query<{ name: string; identity: string }>(
      `select attname as name, attidentity as identity from pg_attribute
        where attrelid = $1::oid and attnum > 0 and not attisdropped and attgenerated = ''`, [table.oid])
    const list = columns.map((column) => quoteIdent(column.name)).join(', ')
    const override = columns.some((column) => column.identity === 'a') ? 'overriding system value' : ''
    const [estimate] = await session.query<{ rows: string }>(`select greatest(reltuples, 0)::int8::text as rows from pg_class where oid = $1::oid`, [table.oid])
    // SYSTEM sampling picks whole pages, so it returns about, not exactly, the share asked for.
    const percent = Math.min(100, (100 * sampleRows * 1.5) / Math.max(1, Number(estimate?.rows ?? 0)))
    const sample = Number(estimate?.rows ?? 0) > sampleRows ? `tablesample system (${percent.toFixed(6)})` : ''
    await session.exec(`insert into ${scratch} (${list}) ${override} select ${list} from ${table.quoted} ${sample} limit ${sampleRows}`)
  }
  // Sequences of the copy continue past the sample; statistics shape the synthetic rows.
  const sequences = await session.query<{ column: string; sequence: string }>(
    `select a.attname as column, pg_get_serial_sequence($1, a.attname) as sequence from pg_attribute a
      where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped and pg_get_serial_sequence($1, a.attname) is not null`, [scratch])
  for (const { column, sequence } of sequences) {
    await session.query(`select setval($1::regclass, coalesce((select max(${quoteIdent(column)}) from ${scratch}), 0) + 1, false)`, [sequence])
  }
  await session.exec(`analyze ${scratch}`)
  const [count] = await session.query<{ n: string }>(`select count(*)::text as n from ${scratch}`)
  return Number(count?.n ?? 0)
}

/** Each real index's counterpart on the scratch copy, by definition (names differ). */
function matchIndexes(real: Index[], copies: Index[]): Map<string, string> {
  const unmatched = [...copies]
  const matches = new Map<string, string>()
  for (const index of real) {
    const at = unmatched.findIndex((copy) => copy.signature === index.signature)
    if (at < 0) throw new WalcostError('UNSUPPORTED_TABLE', `the scratch copy has no counterpart of index ${index.name} (${index.definition}); CREATE TABLE ... LIKE could not copy it.`)
    matches.set(index.oid, unmatched[at]!.name)
    unmatched.splice(at, 1)
  }
  return matches
}

/** A scratch-copy measurement with the real indexes' names, so it reads as the real table's. */
function withRealNames(cost: InsertCost, realName: Map<string, string>): InsertCost {
  const rename = (name: string) => realName.get(name) ?? name
  return {
    ...cost,
    indexes: cost.indexes.map((index) => ({ ...index, name: rename(index.name) })),
    scenario: { ...cost.scenario, droppedIndexes: cost.scenario.droppedIndexes.map(rename) },
  }
}

function auditIndex(index: Index, usage: Map<string, IndexUsage>, scenarios: Record<string, InsertCost>, ageDays: number, minAgeDays: number): IndexAudit {
  const cold = firstRunOf(scenarios)!
  const steady = scenarios.steady!
  const rows = Math.max(1, cold.rows)
  const measured = cold.indexes.find((entry) => entry.name === index.name)
  const steadyMeasured = steady.indexes.find((entry) => entry.name === index.name)
  // Without pg_walinspect, an index's cost is what dropping it alone saves.
  const without = scenarios[`without:${index.name}`]
  const walBytes = measured?.walBytes ?? (without ? (steady.walBytes - without.walBytes) : 0)
  const stats = usage.get(index.oid)
  const idxScan = Number(stats?.idx_scan ?? 0)
  const backs = stats?.backs ?? null
  const { verdict, reason } = judge(idxScan, backs, ageDays, minAgeDays, walBytes / rows)
  return {
    name: index.name,
    definition: index.definition,
    walBytesPerRow: walBytes / rows,
    steadyBytesPerRow: (steadyMeasured?.walBytes ?? walBytes) / Math.max(1, steady.rows),
    recordsPerRow: (measured?.records ?? 0) / rows,
    fpiShare: measured && measured.walBytes > 0 ? measured.fpiBytes / measured.walBytes : 0,
    sizeBytes: Number(stats?.size_bytes ?? 0),
    idxScan,
    backsConstraint: backs,
    verdict,
    reason,
  }
}
