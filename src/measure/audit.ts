import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { DEFAULT_AUDIT_COUNT, DEFAULT_SAMPLE_ROWS } from '../defaults.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { fromServerError, throwIfAborted, WalcostError } from '../errors.js'
import { batchOptionsSchema, parseOptions, replayableRows } from '../options.js'
import { MB } from '../units.js'
import { readServer } from '../wal/server.js'
import { type Index, quoteIdent, resolveTable, type Table } from './catalog.js'
import { type IndexVerdict, judge, minStatsAgeDaysSchema, readStatsAge } from './index-usage.js'
import { onDatabase } from './lifecycle.js'
import { measureOnSession } from './measure.js'
import type { InsertCost, Skipped } from './result.js'
import { compareOnSession, type Decomposition, firstRunOf, scenarioName } from './scenarios.js'

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
    sampleRows: z
      .number()
      .int()
      .min(0)
      .max(10_000_000)
      .default(DEFAULT_SAMPLE_ROWS)
      .describe('Real rows copied into the scratch table before measuring (0: an empty copy).'),
    minStatsAgeDays: minStatsAgeDaysSchema,
    rowsPerSec: z
      .number()
      .positive()
      .optional()
      .describe("The table's ingest rate, to say what the drop candidates cost in MB/s and GB/day."),
  })
  .superRefine((options, context) => {
    if (options.rows !== undefined && options.count !== undefined) {
      context.addIssue({ code: 'custom', path: ['count'], message: 'give the batch as rows or count, not both' })
    }
  })
  .superRefine(replayableRows("the audit's scenarios"))
  .transform((options) => ({
    ...options,
    count: options.rows === undefined ? (options.count ?? DEFAULT_AUDIT_COUNT) : undefined,
  }))

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
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'index-audit'
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

/** auditIndexes without the notebook display; the exported entry point is in api.ts. */
export async function auditIndexes(options: AuditOptions): Promise<IndexAuditResult> {
  const parsed = parseOptions(auditOptionsSchema, options)
  return onDatabase(parsed, (session) => auditOnSession(session, parsed))
}

async function auditOnSession(session: Session, options: ParsedAuditOptions): Promise<IndexAuditResult> {
  const server = await readServer(session)
  const table = await resolveTable(session, options.table)
  const { statsSince, statsAgeDays } = await readStatsAge(session)
  throwIfAborted(options.signal)
  return rolledBack(session, 'transaction', async () => {
    const scratch = await createScratchCopy(session, table)
    const sampled = await fillScratchCopy(session, table, scratch, options.sampleRows)
    const scratchTable = await resolveTable(session, scratch)
    const counterparts = matchIndexes(table.indexes, scratchTable.indexes)
    const byAttribution = server.capabilities.readWal || 'schema' in server.capabilities.walinspect
    const scratchOptions = { ...options, table: scratch, sql: undefined, perIndex: !byAttribution }
    const realName = new Map(counterparts.map(({ real, copy }) => [copy, real.name]))
    const withoutName = (index: string) => scenarioName({ kind: 'without-index', index })
    const realScenario = new Map(counterparts.map(({ real, copy }) => [withoutName(copy), withoutName(real.name)]))
    const comparison = await compareOnSession(session, scratchOptions, { enclosing: 'savepoint' })
    const scenarios = Object.fromEntries(
      Object.entries(comparison.scenarios).map(([name, cost]) => [
        realScenario.get(name) ?? name,
        withRealNames(cost, realName),
      ]),
    )
    const first = firstRunOf(scenarios)
    if (!first) throw new WalcostError('BATCH_FAILED', 'the audit measured no first run; report this as a walcost bug.')
    const indexes = table.indexes.map((index) =>
      auditIndex(index, first, scenarios, statsAgeDays, options.minStatsAgeDays),
    )
    const candidates = indexes.filter((index) => index.verdict === 'drop-candidate')
    if (candidates.length > 0) {
      const dropped = counterparts
        .filter(({ real }) => candidates.some((candidate) => candidate.name === real.name))
        .map(({ copy }) => copy)
      scenarios[scenarioName({ kind: 'without-drop-candidates' })] = withRealNames(
        await measureOnSession(
          session,
          { ...scratchOptions, checkpoint: true, dropIndexes: dropped },
          { enclosing: 'savepoint' },
        ),
        realName,
      )
    }
    const bytesPerRow = first.bytesPerRow ?? 0
    const withoutCandidates = scenarios[scenarioName({ kind: 'without-drop-candidates' })]?.bytesPerRow ?? null
    return {
      kind: 'index-audit',
      table: table.quoted,
      sample: { rows: sampled, requested: options.sampleRows },
      statsSince,
      statsAgeDays,
      indexes,
      bytesPerRow,
      bytesPerRowWithoutDropCandidates: withoutCandidates,
      atRate:
        options.rowsPerSec === undefined
          ? null
          : {
              rowsPerSec: options.rowsPerSec,
              walMBps: (bytesPerRow * options.rowsPerSec) / MB,
              walMBpsWithoutDropCandidates: ((withoutCandidates ?? bytesPerRow) * options.rowsPerSec) / MB,
              savedGBPerDay: ((bytesPerRow - (withoutCandidates ?? bytesPerRow)) * options.rowsPerSec * 86_400) / 1e9,
            },
      decomposition: {
        ...comparison.decomposition,
        parts: comparison.decomposition.parts.map((part) => ({ ...part, name: realName.get(part.name) ?? part.name })),
      },
      scenarios,
      skipped: first.skipped,
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
  try {
    await session.exec(
      `create ${table.unlogged ? 'unlogged ' : ''}table ${scratch} (like ${table.quoted} including all)`,
    )
  } catch (error) {
    const failure = fromServerError(
      error,
      `creating a scratch copy of ${table.quoted} (inside a transaction that is rolled back)`,
    )
    if (failure.code === 'PERMISSION_DENIED') {
      throw new WalcostError(
        'PERMISSION_DENIED',
        `the audit measures on a scratch copy created in schema ${quoteIdent(table.schema)} and removed by a rollback: GRANT CREATE ON SCHEMA ${quoteIdent(table.schema)} TO the role.`,
        { cause: error },
      )
    }
    throw failure
  }
  for (const option of table.options) {
    const [key, value] = option.split(/=(.*)/s)
    await session.exec(`alter table ${scratch} set (${quoteIdent(key ?? '')} = ${quoteLiteral(value ?? '')})`)
  }
  // LIKE ... INCLUDING ALL gives identity columns sequences of their own, but copies nextval() defaults.
  const sequenced = table.columns.filter((column) => column.sequenced && column.identity === '')
  for (const [i, { name: column }] of sequenced.entries()) {
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
    const columns = table.columns.filter((column) => !column.generated)
    const list = columns.map((column) => quoteIdent(column.name)).join(', ')
    const override = columns.some((column) => column.identity === 'a') ? 'overriding system value' : ''
    // SYSTEM sampling picks whole pages, so it returns about, not exactly, the share asked for.
    const percent = Math.min(100, (100 * sampleRows * 1.5) / Math.max(1, table.estimatedRows))
    const sample = table.estimatedRows > sampleRows ? `tablesample system (${percent.toFixed(6)})` : ''
    await session.exec(
      `insert into ${scratch} (${list}) ${override} select ${list} from ${table.quoted} ${sample} limit ${sampleRows}`,
    )
  }
  // Sequences of the copy continue past the sample; statistics shape the synthetic rows.
  const sequences = await session.query<{ column: string; sequence: string }>(
    `select a.attname as column, pg_get_serial_sequence($1, a.attname) as sequence from pg_attribute a
      where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped and pg_get_serial_sequence($1, a.attname) is not null`,
    [scratch],
  )
  for (const { column, sequence } of sequences) {
    await session.query(
      `select setval($1::regclass, coalesce((select max(${quoteIdent(column)}) from ${scratch}), 0) + 1, false)`,
      [sequence],
    )
  }
  await session.exec(`analyze ${scratch}`)
  const [count] = await session.query<{ n: string }>(`select count(*)::text as n from ${scratch}`)
  return Number(count?.n ?? 0)
}

/** Each real index's counterpart on the scratch copy, by definition (names differ). */
function matchIndexes(real: Index[], copies: Index[]): Array<{ real: Index; copy: string }> {
  const unmatched = [...copies]
  return real.map((index) => {
    const at = unmatched.findIndex((copy) => copy.signature === index.signature)
    const [copy] = at < 0 ? [] : unmatched.splice(at, 1)
    if (!copy) {
      throw new WalcostError(
        'UNSUPPORTED_TABLE',
        `the scratch copy has no counterpart of index ${index.name} (${index.definition}); CREATE TABLE ... LIKE could not copy it.`,
      )
    }
    return { real: index, copy: copy.name }
  })
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

function auditIndex(
  index: Index,
  cold: InsertCost,
  scenarios: Record<string, InsertCost>,
  ageDays: number,
  minAgeDays: number,
): IndexAudit {
  const steady = scenarios[scenarioName({ kind: 'steady' })] ?? cold
  const rows = Math.max(1, cold.rows)
  const measured = cold.indexes.find((entry) => entry.name === index.name)
  const steadyMeasured = steady.indexes.find((entry) => entry.name === index.name)
  // Without pg_walinspect, an index's cost is what dropping it alone saves.
  const without = scenarios[scenarioName({ kind: 'without-index', index: index.name })]
  const walBytes = measured?.walBytes ?? (without ? steady.walBytes - without.walBytes : 0)
  const idxScan = index.scans ?? 0
  const { verdict, reason } = judge(idxScan, index.backs, ageDays, minAgeDays, walBytes / rows)
  return {
    name: index.name,
    definition: index.definition,
    walBytesPerRow: walBytes / rows,
    steadyBytesPerRow: (steadyMeasured?.walBytes ?? walBytes) / Math.max(1, steady.rows),
    recordsPerRow: (measured?.records ?? 0) / rows,
    fpiShare: measured && measured.walBytes > 0 ? measured.fpiBytes / measured.walBytes : 0,
    sizeBytes: index.sizeBytes,
    idxScan,
    backsConstraint: index.backs,
    verdict,
    reason,
  }
}
