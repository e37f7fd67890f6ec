import { z } from 'zod'
import type { Database } from '../core/database.js'
import { DEFAULT_FILLFACTORS } from '../core/defaults.js'
import { counted, oneDecimal, percent } from '../core/format.js'
import { batchOptionsSchema, parseOptions, replayableRows, type WithDatabase } from '../core/options.js'
import type { Session } from '../driver/types.js'
import { resolveTable } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import { partsOf } from '../measure/parts.js'
import { readSyntheticStart } from '../measure/synthetic.js'
import { asWriteCost, setHintBits, type WriteCost } from '../measure/write.js'
import { exactlyOneWrite, writeBatchShape, writeSql } from '../measure/write-batch.js'
import {
  aaCheck,
  type Comparison,
  comparableOptionsShape,
  comparableRuns,
  givenNamesTable,
  measureOn,
} from './comparable.js'
import { type ScenarioRun, scenarioName, startingNotes } from './scenarios.js'
import type { Storage } from './scratch.js'

/**
 * Options of {@link compareWriteScenarios}: a write batch (an `update`, `delete`, `upsert`, or
 * `sql`, `rows`, `count`) and where its runs start.
 *
 * @example
 * const options: WriteScenariosOptions = { table: 'orders', update: { rows: 500, set: { status: "'shipped'" } } }
 */
export const writeScenariosOptionsSchema = batchOptionsSchema
  .extend({
    ...comparableOptionsShape,
    ...writeBatchShape,
    perIndex: z
      .boolean()
      .default(true)
      .describe('Also measure the batch without each index alone (`without:<index>`): which one costs HOT.'),
    fillfactors: z
      .array(z.number().int().min(10).max(100))
      .max(5)
      .default(DEFAULT_FILLFACTORS)
      .describe(
        'Fillfactors to rewrite a copy of the table with (`fillfactor:<n>`): what free space on the pages buys.',
      ),
  })
  .superRefine(exactlyOneWrite)
  .superRefine(replayableRows('the scenarios'))

export type WriteScenariosOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof writeScenariosOptionsSchema>,
  Db
>
type ParsedWriteScenariosOptions = z.output<typeof writeScenariosOptionsSchema>

export interface WriteScenarioComparison extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'write-scenarios'
  /**
   * By scenario name, each right after a checkpoint: `as-given`, `without:<index>` for each index,
   * `fillfactor:<n>` for each fillfactor.
   */
  scenarios: Record<string, WriteCost>
  /** What dominates the batch's WAL, and what an index or free space would change, in words. */
  summary: string
}

/** compareWriteScenarios without the notebook display; the exported entry point is in api.ts. */
export async function compareWriteScenarios(options: WriteScenariosOptions): Promise<WriteScenarioComparison> {
  const parsed = parseOptions(writeScenariosOptionsSchema, options)
  return onDatabase(parsed, (session) => compareWritesOnSession(session, parsed))
}

/** What a run changes: indexes dropped, or the table rewritten with a fillfactor. */
interface WriteRun {
  run: ScenarioRun
  dropIndexes: string[]
  storage?: Storage
}

async function compareWritesOnSession(
  session: Session,
  options: ParsedWriteScenariosOptions,
): Promise<WriteScenarioComparison> {
  const table = await resolveTable(session, options.table)
  const written = writeSql(table, options)
  const syntheticStart = options.count !== undefined ? await readSyntheticStart(session, table) : undefined
  const comparable = await comparableRuns(session, table, {
    runsOn: options.runsOn,
    sampleRows: options.sampleRows,
    realTableNeeded: givenNamesTable({ sql: written?.sql, run: options.run }),
    writes: options.update
      ? ['UPDATE']
      : options.delete
        ? ['DELETE']
        : options.upsert
          ? ['INSERT', 'UPDATE']
          : undefined,
  })
  const mayDrop = (table.owned || comparable.startingState === 'scratch-copy') && table.indexes.length > 0
  const mayRewrite = comparable.startingState !== 'ordered'
  const asGiven: WriteRun = { run: { kind: 'as-given' }, dropIndexes: [] }
  const runs: WriteRun[] = [
    asGiven,
    ...(mayDrop && options.perIndex
      ? table.indexes.map(
          ({ name }): WriteRun => ({ run: { kind: 'without-index', index: name }, dropIndexes: [name] }),
        )
      : []),
    ...(mayRewrite
      ? options.fillfactors.map(
          (fillfactor): WriteRun => ({
            run: { kind: 'fillfactor', fillfactor },
            dropIndexes: [],
            storage: { fillfactor },
          }),
        )
      : []),
  ]
  const measure = async ({ dropIndexes, storage }: WriteRun) =>
    asWriteCost(
      await comparable.run(async (target) => {
        // A scratch copy's rows are the transaction's own, whose hint bits are never set: nothing to scan.
        if (comparable.startingState !== 'scratch-copy') await setHintBits(target.session, target.table)
        return measureOn(target, { ...options, sql: written?.sql }, { checkpoint: true, dropIndexes }, syntheticStart)
      }, storage),
      table,
      written?.setColumns ?? [],
      null,
    )
  const scenarios: Record<string, WriteCost> = {}
  for (const run of runs) scenarios[scenarioName(run.run)] = await measure(run)
  const first = scenarios[scenarioName(asGiven.run)] as WriteCost
  const again = await measure(asGiven)
  const perModifiedRow = (cost: WriteCost) => ({ ...cost, bytesPerRow: cost.bytesPerModifiedRow })
  const notes = [
    ...startingNotes(comparable),
    ...(!mayDrop && table.indexes.length > 0
      ? [
          `The runs without an index were skipped: dropping an index, even in a transaction that is rolled back, needs ownership of ${table.quoted}.`,
        ]
      : []),
    ...(mayRewrite
      ? comparable.startingState === 'clone' && options.fillfactors.length > 0
        ? [
            'Each fillfactor run rewrote its clone of the table (VACUUM FULL), which also rebuilt its indexes compactly: compare the fillfactor runs with one another.',
          ]
        : []
      : ['The fillfactor runs were skipped: they rewrite the table, which only a copy allows (runsOn: copy).']),
  ]
  return {
    kind: 'write-scenarios',
    scenarios,
    summary: summarise(scenarios, scenarioName(asGiven.run)),
    startingState: comparable.startingState,
    sample: comparable.sample,
    aa: aaCheck(scenarioName(asGiven.run), perModifiedRow(first), perModifiedRow(again)),
    notes,
  }
}

/** What dominates as given, which index alone costs the most, and what the fillfactors change. */
function summarise(scenarios: Record<string, WriteCost>, baselineName: string): string {
  const baseline = scenarios[baselineName] as WriteCost
  const perRow = (cost: WriteCost) => cost.bytesPerModifiedRow ?? 0
  const hot = (cost: WriteCost) =>
    cost.writes.updated > 0 ? `, ${percent(cost.writes.hotUpdated / cost.writes.updated)} of updates HOT` : ''
  const parts = partsOf(baseline) ?? []
  const groups: Array<[string, number]> = [
    ['heap records', parts.filter((part) => part.kind === 'heap').reduce((sum, part) => sum + part.bytes, 0)],
    ['index entries', parts.filter((part) => part.kind === 'index').reduce((sum, part) => sum + part.bytes, 0)],
    ['full-page images', parts.filter((part) => part.kind === 'fpi').reduce((sum, part) => sum + part.bytes, 0)],
  ]
  const [largest, bytes] = groups.reduce((best, group) => (group[1] > best[1] ? group : best))
  const lead =
    parts.length > 0 && baseline.walBytes > 0
      ? `${largest} are ${percent(bytes / baseline.walBytes)} of the WAL after a checkpoint (${oneDecimal(perRow(baseline))} bytes a row changed${hot(baseline)})`
      : `${oneDecimal(perRow(baseline))} bytes of WAL a row changed after a checkpoint${hot(baseline)}`
  const others = Object.entries(scenarios).filter(([name]) => name !== baselineName)
  const against = ([name, cost]: [string, WriteCost]) => {
    const change = (perRow(cost) - perRow(baseline)) / Math.max(perRow(baseline), 1)
    return `${name} ${oneDecimal(perRow(cost))} bytes a row (${change > 0 ? '+' : ''}${percent(change)})${hot(cost)}`
  }
  const withoutIndex = others
    .filter(([name]) => name.startsWith('without:'))
    .reduce<[string, WriteCost] | null>(
      (best, entry) => (!best || perRow(entry[1]) < perRow(best[1]) ? entry : best),
      null,
    )
  const fillfactors = others.filter(([name]) => name.startsWith('fillfactor:'))
  return [
    `${lead}.`,
    ...(withoutIndex ? [`Without one index, the cheapest is ${against(withoutIndex)}.`] : []),
    ...(fillfactors.length > 0 ? [`Rewritten at a fillfactor: ${fillfactors.map(against).join('; ')}.`] : []),
    ...(baseline.writes.updated === 0 && baseline.writes.deleted === 0
      ? [`The batch updated nothing: ${counted(baseline.writes.inserted, 'row')} inserted.`]
      : []),
  ].join(' ')
}
