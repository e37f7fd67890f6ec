import { z } from 'zod'
import { fromServerError } from '../core/errors.js'
import { oneDecimal } from '../core/format.js'
import { batchOptionsSchema, exactlyOneBatch, parseOptions, replayableRows } from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { resolveTable } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import { partLabel, partsOf } from '../measure/parts.js'
import type { InsertCost } from '../measure/result.js'
import { readSyntheticStart } from '../measure/synthetic.js'
import { type AaCheck, aaCheck, type Comparison, comparableRuns, measureOn, type RunTarget } from './comparable.js'

/**
 * Options of {@link compareMigration}: the batch, as for measureInsertCost, and the migration.
 *
 * @example
 * const options: MigrationOptions = { setup, table: 'orders', count: 10_000, migration: 'create index on orders (status)' }
 */
export const migrationOptionsSchema = batchOptionsSchema
  .extend({
    migration: z
      .string()
      .trim()
      .min(1, 'give the migration as SQL')
      .describe(
        'The migration as SQL (DDL: an index, a column, a trigger): applied inside the measuring transaction and rolled back with it.',
      ),
    checkpoint: z
      .boolean()
      .default(false)
      .describe('Measure both states right after a CHECKPOINT (full-page images included).'),
  })
  .superRefine(exactlyOneBatch)
  .superRefine(replayableRows('the migration comparison'))

export type MigrationOptions = z.input<typeof migrationOptionsSchema>
type ParsedMigrationOptions = z.output<typeof migrationOptionsSchema>

/** One part of the WAL a row, before and after the migration. */
export interface MigrationChange {
  /** 'heap', 'index <name>', 'relation <name>', 'full-page images', 'other', or 'total'. */
  part: string
  /** Bytes per row; null where the part does not exist in that state (a new index). */
  before: number | null
  after: number | null
  change: number
  /** The change as a share of `before`, null for a new part. */
  changePct: number | null
  /** No larger than the A/A check: noise. */
  noise: boolean
}

export interface MigrationComparison extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'migration'
  table: string
  migration: string
  before: InsertCost
  after: InsertCost
  /** Every part that exists in either state, the total first. */
  changes: MigrationChange[]
  /** What the migration does to inserts, in one sentence a part. */
  summary: string
}

/** compareMigration without the notebook display; the exported entry point is in api.ts. */
export async function compareMigration(options: MigrationOptions): Promise<MigrationComparison> {
  const parsed = parseOptions(migrationOptionsSchema, options)
  return onDatabase(parsed, (session) => migrationOnSession(session, parsed))
}

async function migrationOnSession(session: Session, options: ParsedMigrationOptions): Promise<MigrationComparison> {
  const table = await resolveTable(session, options.table)
  const syntheticStart = options.count !== undefined ? await readSyntheticStart(session, table) : undefined
  const comparable = await comparableRuns(session, table, {
    runsOn: 'copy',
    sampleRows: 0,
    realTableNeeded: 'the migration names the real table, so its runs cannot write to a copy',
  })
  const measure = (target: RunTarget) =>
    measureOn(target, options, { checkpoint: options.checkpoint, dropIndexes: false }, syntheticStart)
  const before = await comparable.run(measure)
  const after = await comparable.run((target) =>
    rolledBack(target.session, 'transaction', async () => {
      try {
        await target.session.exec(options.migration)
      } catch (error) {
        throw fromServerError(
          error,
          'applying the migration (inside a transaction that is rolled back)',
          'SETUP_FAILED',
        )
      }
      return measure({ ...target, inTransaction: true })
    }),
  )
  const again = await comparable.run(measure)
  const aa = aaCheck('before', before, again)
  const changes = compareParts(before, after, aa)
  return {
    kind: 'migration',
    table: table.quoted,
    migration: options.migration,
    before,
    after,
    changes,
    summary: summarise(changes, table.quoted),
    startingState: comparable.startingState,
    sample: null,
    aa,
    notes:
      comparable.startingState === 'ordered'
        ? [
            `On a real server the migration runs on ${table.quoted} itself, inside the measuring transaction, and is rolled back with it: it holds the locks its DDL takes (an index build or a table rewrite blocks writers) for the length of the run, waiting at most lockTimeoutMs for them. Measure on a staging copy of the database when that matters.`,
          ]
        : [],
  }
}

/** Bytes per row by part in each state, every part of either, the total first. */
function compareParts(before: InsertCost, after: InsertCost, aa: AaCheck): MigrationChange[] {
  const perRow = (cost: InsertCost) =>
    new Map((partsOf(cost) ?? []).map((part) => [partLabel(part), part.bytes / (cost.rows || 1)]))
  const [was, is] = [perRow(before), perRow(after)]
  const parts = [...new Set([...was.keys(), ...is.keys()])]
  const change = (part: string, from: number | null, to: number | null): MigrationChange => {
    const delta = (to ?? 0) - (from ?? 0)
    return {
      part,
      before: from,
      after: to,
      change: delta,
      changePct: from ? (100 * delta) / from : null,
      // Below the A/A check, or below what a table shows (0.05 bytes a row): no change.
      noise: Math.abs(delta) <= Math.max(aa.bytesPerRow, NOISE_FLOOR),
    }
  }
  return [
    change('total', before.bytesPerRow, after.bytesPerRow),
    ...parts.map((part) => change(part, was.get(part) ?? null, is.get(part) ?? null)),
  ]
}

/** Changes smaller than this many bytes a row round to 0.0 in every table. */
const NOISE_FLOOR = 0.05

const signed = (value: number) => `${value > 0 ? '+' : ''}${oneDecimal(value)}`

function summarise(changes: MigrationChange[], table: string): string {
  const [total, ...parts] = changes
  const described = parts
    .filter((entry) => !entry.noise)
    .sort((a, b) => Math.abs(b.change) - Math.abs(a.change))
    .map((entry) =>
      entry.before === null
        ? `new ${entry.part} ${signed(entry.change)} bytes a row`
        : entry.after === null
          ? `${entry.part} (gone) ${signed(entry.change)} bytes a row`
          : `${entry.part} ${signed(entry.change)} bytes a row (${signed(entry.changePct ?? 0)}%)`,
    )
  if (!total) return ''
  const whole = total.noise
    ? `The migration leaves inserts into ${table} as they were (within the A/A check)`
    : `The migration ${total.change > 0 ? 'adds' : 'saves'} ${oneDecimal(Math.abs(total.change))} bytes a row (${signed(total.changePct ?? 0)}%) to inserts into ${table}`
  return `${whole}${described.length > 0 ? `: ${described.join('; ')}` : ''}.`
}
