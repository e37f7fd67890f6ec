import { z } from 'zod'
import type { Database } from '../core/database.js'
import { fromServerError } from '../core/errors.js'
import { counted, oneDecimal } from '../core/format.js'
import {
  batchOptionsSchema,
  exactlyOneBatch,
  parseOptions,
  replayableRows,
  type WithDatabase,
} from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { resolveTable } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import type { InsertCost, RelationCost } from '../measure/result.js'
import { readSyntheticStart } from '../measure/synthetic.js'
import {
  type AaCheck,
  aaCheck,
  type Comparison,
  comparableOptionsShape,
  comparableRuns,
  givenNamesTable,
  measureOn,
  type RunTarget,
  steadyOn,
} from './comparable.js'

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
    runsOn: comparableOptionsShape.runsOn,
  })
  .superRefine(exactlyOneBatch)
  .superRefine(replayableRows('the migration comparison'))

export type MigrationOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof migrationOptionsSchema>,
  Db
>
type ParsedMigrationOptions = z.output<typeof migrationOptionsSchema>

/** One relation's WAL a row (its records and their images), or the total, before and after the migration. */
export interface MigrationChange {
  /** 'heap', 'index <name>', 'relation <name>', 'other' (records of no relation, WAL page headers), or 'total'. */
  part: string
  /** Bytes per row, images included; null where the part does not exist in that state (a new index). */
  before: number | null
  after: number | null
  change: number
  /** The change as a share of `before`, null for a new part. */
  changePct: number | null
  /**
   * How much the same part moved between the A/A check's two runs of the state before, in bytes a
   * row (at least 0.05, what a table shows): the change's own resolution.
   */
  resolution: number
  /** No larger than its resolution: reported as no change. */
  noise: boolean
}

/** The state one side of the comparison was measured in. */
export interface MigrationState {
  /** 'after-checkpoint': right after a CHECKPOINT; 'steady': without one (a page not changed since the last one still takes an image, in fpiCount). */
  condition: 'after-checkpoint' | 'steady'
  /** Full-page images the batch still logged (the first change to a page since the checkpoint); null when they could not be counted. */
  fpiCount: number | null
  /** Their bytes a row; null when they could not be counted. */
  fpiBytesPerRow: number | null
}

export interface MigrationComparison extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'migration'
  table: string
  migration: string
  before: InsertCost
  after: InsertCost
  /** Which state each side ran in, and the images its pages took. */
  states: { before: MigrationState; after: MigrationState }
  /** The total first, then every relation of either state, and the rest. */
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
    runsOn: options.runsOn,
    sampleRows: 0,
    realTableNeeded: 'the migration names the real table, so its runs cannot write to a copy',
    writes: givenNamesTable(options) ? [] : ['INSERT'],
  })
  const once = (target: RunTarget) =>
    measureOn(target, options, { checkpoint: options.checkpoint, dropIndexes: false }, syntheticStart)
  // Without a CHECKPOINT each state is measured steady: a fresh clone starts right after one, so
  // its pages take their images in a warm-up run first.
  const measure = (target: RunTarget) => (options.checkpoint ? once(target) : steadyOn(target, once))
  // Each state is measured inside a transaction that is rolled back, the migration's DDL first in
  // the state after: measured outside one, the state before would differ from it in more than the
  // migration (its warm-up's rows rolled back by a transaction's abort rather than a savepoint's),
  // and an index the migration leaves alone would seem to change.
  const inTransaction = (target: RunTarget, migration: string | null) =>
    rolledBack(target.session, 'transaction', async () => {
      if (migration !== null) {
        try {
          await target.session.exec(migration)
        } catch (error) {
          throw fromServerError(
            error,
            'applying the migration (inside a transaction that is rolled back)',
            'SETUP_FAILED',
          )
        }
      }
      return measure({ ...target, inTransaction: true })
    })
  const before = await comparable.run((target) => inTransaction(target, null))
  const after = await comparable.run((target) => inTransaction(target, options.migration))
  const again = await comparable.run((target) => inTransaction(target, null))
  const aa = aaCheck('before', before, again)
  const changes = compareRelations(before, after, again, aa)
  const states = { before: stateOf(before), after: stateOf(after) }
  return {
    kind: 'migration',
    table: table.quoted,
    migration: options.migration,
    before,
    after,
    states,
    changes,
    summary: summarise(changes, table.quoted),
    startingState: comparable.startingState,
    sample: null,
    aa,
    notes: [
      statesSentence(states, comparable.startingState === 'clone'),
      RESOLUTION_NOTE,
      ...(comparable.startingState === 'ordered'
        ? [
            `On a real server the migration runs on ${table.quoted} itself, inside the measuring transaction, and is rolled back with it: it holds the locks its DDL takes (an index build or a table rewrite blocks writers) for the length of the run, waiting at most lockTimeoutMs for them. Measure on a staging copy of the database when that matters.`,
          ]
        : []),
    ],
  }
}

function stateOf(cost: InsertCost): MigrationState {
  return {
    condition: cost.scenario.checkpoint ? 'after-checkpoint' : 'steady',
    fpiCount: cost.fpiCount,
    fpiBytesPerRow: cost.breakdown ? cost.breakdown.fpiBytes / (cost.rows || 1) : null,
  }
}

function statesSentence({ before, after }: MigrationComparison['states'], warmedUp: boolean): string {
  const images = (state: MigrationState) =>
    state.fpiBytesPerRow === null
      ? 'an unknown number of full-page images'
      : `${counted(state.fpiCount ?? 0, 'full-page image')} (${oneDecimal(state.fpiBytesPerRow)} bytes a row)`
  const condition = (state: MigrationState) =>
    state.condition === 'after-checkpoint'
      ? 'right after a CHECKPOINT'
      : `in steady state, without a CHECKPOINT before it${warmedUp ? ' and after a warm-up run of the same batch, rolled back' : ''}`
  const where =
    before.condition === after.condition
      ? `Both states were measured ${condition(before)}`
      : `The state before was measured ${condition(before)}, the state after ${condition(after)}`
  return `${where}; the batch's pages took ${images(before)} before the migration and ${images(after)} after it, counted in each relation's bytes.`
}

/** A relation's bytes a row in one state (its records and their images), and its largest unit. */
interface RelationBytes {
  bytesPerRow: number
  /**
   * One record of each type it writes, and one image, at their average sizes: where its rows fall
   * on the pages, a batch can take one page split (a split and the parent's insert) or one image
   * more or fewer than the same batch again.
   */
  unit: number
}

/** Every relation the batch wrote, images included, and the rest; null when the WAL could not be split. */
function relationsOf(cost: InsertCost): Map<string, RelationBytes> | null {
  if (!cost.breakdown) return null
  const rows = cost.rows || 1
  const relations: Array<[string, RelationCost | null]> = [
    ['heap', cost.heap],
    ...cost.indexes.map((index): [string, RelationCost] => [`index ${index.name}`, index]),
    ...cost.otherRelations.map((relation): [string, RelationCost] => [`relation ${relation.name}`, relation]),
  ]
  const unit = (relation: RelationCost) =>
    (relation.fpiCount > 0 ? relation.fpiBytes / relation.fpiCount : 0) +
    relation.recordTypes.reduce((sum, type) => sum + (type.walBytes - type.fpiBytes) / (type.records || 1), 0)
  const named = relations.reduce((sum, [, relation]) => sum + (relation?.walBytes ?? 0), 0)
  return new Map([
    ...relations.map(([part, relation]): [string, RelationBytes] => [
      part,
      { bytesPerRow: (relation?.walBytes ?? 0) / rows, unit: relation ? unit(relation) : 0 },
    ]),
    ['other', { bytesPerRow: (cost.walBytes - named) / rows, unit: 0 }],
  ])
}

/**
 * Bytes a row by relation in each state, every relation of either, the total first. Each change is
 * judged against its own resolution: how much the relation moved in the A/A check, and at least one
 * record of each of its types and one image a batch.
 */
function compareRelations(before: InsertCost, after: InsertCost, again: InsertCost, aa: AaCheck): MigrationChange[] {
  const [was, is, repeated] = [relationsOf(before), relationsOf(after), relationsOf(again)] as const
  const parts = [...new Set([...(was?.keys() ?? []), ...(is?.keys() ?? [])])]
  const change = (part: string, from: number | null, to: number | null, resolution: number): MigrationChange => {
    const delta = (to ?? 0) - (from ?? 0)
    return {
      part,
      before: from,
      after: to,
      change: delta,
      changePct: from ? (100 * delta) / from : null,
      resolution: Math.max(resolution, NOISE_FLOOR),
      // One record more, to the byte, is within: the bytes a row are a quotient, compared with a margin for its rounding.
      noise: Math.abs(delta) <= Math.max(resolution, NOISE_FLOOR) * (1 + 1e-9),
    }
  }
  const perRow = (state: Map<string, RelationBytes> | null, part: string) => state?.get(part)?.bytesPerRow ?? null
  const states = [
    [before, was],
    [after, is],
    [again, repeated],
  ] as const
  return [
    change('total', before.bytesPerRow, after.bytesPerRow, aa.bytesPerRow),
    ...parts.map((part) => {
      const moved = Math.abs((perRow(repeated, part) ?? 0) - (perRow(was, part) ?? 0))
      const unit = Math.max(...states.map(([cost, relations]) => (relations?.get(part)?.unit ?? 0) / (cost.rows || 1)))
      return change(part, perRow(was, part), perRow(is, part), Math.max(moved, unit))
    }),
  ]
}

const RESOLUTION_NOTE =
  "Each relation's change is judged against its own resolution: how much it moved in the A/A check, and at least one record of each type it writes and one image a batch (a page split more or fewer); a change within it is no change. 'other' (records of no relation, and the WAL page headers) grows with the WAL the migration adds."

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
