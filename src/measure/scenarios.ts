import { z } from 'zod'
import type { Session } from '../driver/types.js'
import { WalcostError } from '../errors.js'
import { batchOptionsSchema, exactlyOneBatch, parseOptions, replayableRows } from '../options.js'
import { measureOnSession, onDatabase, type MeasureContext } from './measure.js'
import { aaCheck, comparableRuns, type AaCheck, type StartingState } from './comparable.js'
import { partsOf, type Part } from './parts.js'
import type { InsertCost } from './result.js'
import { readSyntheticStart } from './synthetic.js'
import { resolveTable } from './table.js'

/**
 * Options of {@link compareScenarios}: those of measureInsertCost without checkpoint and
 * dropIndexes, which the scenarios set.
 *
 * @example
 * const options: CompareOptions = { table: 'device_metrics', count: 100_000, method: 'copy' }
 */
export const compareOptionsSchema = batchOptionsSchema
  .extend({
    perIndex: z.boolean().default(true).describe('Also measure the batch without each index alone (`without:<index>`).'),
  })
  .superRefine(exactlyOneBatch)
  .superRefine(replayableRows('the scenarios'))

export type CompareOptions = z.input<typeof compareOptionsSchema>
export type ParsedCompareOptions = z.output<typeof compareOptionsSchema>

/** One part of the write cost: bytes per row and share of WAL after a checkpoint. */
export interface DecompositionPart {
  part: Part['kind']
  /** 'heap', an index's or another relation's name, 'full-page images' or 'other'. */
  name: string
  bytesPerRow: number
  /** Of the after-checkpoint WAL per row; the parts add up to 1. */
  share: number
}

export interface Decomposition {
  /** WAL per row right after a checkpoint: the whole that the shares divide. */
  bytesPerRow: number
  parts: DecompositionPart[]
  /** Index records' share of heap plus index record bytes (no images), as the field notes count it. */
  indexShareOfRecordBytes: number
  /** 'wal' or 'walinspect': parts read from the WAL by relation; 'differences': from the scenarios' differences (no attribution). */
  method: 'wal' | 'walinspect' | 'differences'
  /** What dominates, in one sentence. */
  summary: string
}

export interface ScenarioComparison {
  /** `after-checkpoint`, `steady`, `no-indexes`, then `without:<index>` for each index. */
  scenarios: Record<string, InsertCost>
  decomposition: Decomposition
  /** Where each run started: a clone of the database (PGlite), or the table as the runs before left it. */
  startingState: StartingState
  /** after-checkpoint measured again, last: the comparison's resolution. */
  aa: AaCheck
  /** What to keep in mind when reading the scenarios. */
  notes: string[]
}

const REPEATED_KEYS = 'This batch inserts the same keys in every scenario, beside the dead index entries of the previous scenarios\' rolled-back runs, so later scenarios split index pages more than a batch of new keys would. A count batch, or sql given as a function of the run number, continues its keys instead. The decomposition is read from the after-checkpoint run, which sees the table as it was.'

/**
 * The field notes' method in one call: the same batch right after a CHECKPOINT, again in steady
 * state (the first run is its warm-up, so pages are already dirty), with every index dropped and
 * without each index alone, then the cost split into heap, each index, full-page images and the rest.
 *
 * @example
 * const { scenarios, decomposition } = await compareScenarios({ db: url, table: 'device_metrics', count: 100_000 })
 * console.log(decomposition.summary) // "index maintenance is 59% of WAL after a checkpoint; ..."
 */
export async function compareScenarios(options: CompareOptions): Promise<ScenarioComparison> {
  const parsed = parseOptions(compareOptionsSchema, options)
  return onDatabase(parsed, (session) => compareOnSession(session, parsed))
}

/** The scenarios on an open session; with `context` they can run inside a caller's transaction. */
export async function compareOnSession(session: Session, options: ParsedCompareOptions, context: MeasureContext = {}): Promise<ScenarioComparison> {
  const table = await resolveTable(session, options.table)
  // Read once, so every scenario generates the very same rows.
  const syntheticStart = options.count !== undefined ? context.syntheticStart ?? await readSyntheticStart(session, table) : undefined
  const runs: Array<[string, { checkpoint: boolean; dropIndexes: boolean | string[] }]> = [
    ['after-checkpoint', { checkpoint: true, dropIndexes: false }],
    ['steady', { checkpoint: false, dropIndexes: false }],
  ]
  // Dropping an index, even for a rolled-back run, needs ownership of the table.
  const mayDrop = table.owned && table.indexes.length > 0
  if (mayDrop) runs.push(['no-indexes', { checkpoint: false, dropIndexes: true }])
  if (mayDrop && options.perIndex) {
    for (const index of table.indexes) runs.push([`without:${index.name}`, { checkpoint: false, dropIndexes: [index.name] }])
  }
  const comparable = comparableRuns(session, context.enclosing)
  const measureAt = (on: Session, scenario: (typeof runs)[number][1], run: number) => {
    const start = syntheticStart && { ...syntheticStart, firstRow: run * (options.count ?? 0) }
    return measureOnSession(on, { ...options, ...scenario }, { ...context, syntheticStart: start, run })
  }
  const scenarios: Record<string, InsertCost> = {}
  for (const [name, scenario] of runs) {
    scenarios[name] = await comparable.run(async (on, run) => {
      // Without a CHECKPOINT a run measures pages already changed since the last one. A fresh clone
      // starts right after one (opening a copied data directory ends with it), so the same run,
      // rolled back, changes them first; ordered, the runs before it did.
      if (scenario.checkpoint || comparable.startingState === 'ordered') return measureAt(on, scenario, run)
      await measureAt(on, scenario, run)
      return measureAt(on, scenario, run + 1)
    })
  }
  const [, baseline] = runs[0]!
  const again = await comparable.run((on, run) => measureAt(on, baseline, run))
  // A first run whose CHECKPOINT could not run is not shown as after-checkpoint.
  const checkpointed = scenarios['after-checkpoint']!.scenario.checkpoint
  const named = checkpointed ? scenarios : Object.fromEntries(Object.entries(scenarios).map(([name, cost]) => [name === 'after-checkpoint' ? FIRST_RUN : name, cost]))
  const baselineName = checkpointed ? 'after-checkpoint' : FIRST_RUN
  const repeatsKeys = comparable.startingState === 'ordered' && (typeof options.sql === 'string' || options.rows !== undefined)
  const notes = [
    ...(checkpointed ? [] : [`The first run is shown as ${FIRST_RUN}, not after-checkpoint: its CHECKPOINT was skipped (${scenarios['after-checkpoint']!.skipped.find((entry) => entry.step === 'checkpoint')?.reason ?? 'not allowed'}), so its images are whatever the server's last checkpoint left.`]),
    ...(repeatsKeys ? [REPEATED_KEYS] : []),
    ...(!table.owned && table.indexes.length > 0 ? [`The scenarios without indexes were skipped: dropping an index, even in a transaction that is rolled back, needs ownership of ${table.quoted} (run as its owner, or a member of the owning role).`] : []),
  ]
  return { scenarios: named, decomposition: decompose(named), startingState: comparable.startingState, aa: aaCheck(baselineName, named[baselineName]!, again), notes }
}

const percent = (share: number) => `${Math.round(share * 100)}%`

/**
 * The after-checkpoint run's own split by relation: it is the first run, so it sees the table as it
 * was, and its images are exactly what the checkpoint added.
 */
function attributedParts(cold: InsertCost): DecompositionPart[] {
  return partsOf(cold)!.map((part) => ({ part: part.kind, name: part.name, bytesPerRow: part.bytes / cold.rows, share: 0 }))
}

/** The field notes' method without pg_walinspect: each part is what leaving it out saves. */
function partsFromDifferences(scenarios: Record<string, InsertCost>, total: number, steady: number): DecompositionPart[] {
  const heap = scenarios['no-indexes']?.bytesPerRow ?? steady
  const indexes = Object.entries(scenarios)
    .filter(([name]) => name.startsWith('without:'))
    .map(([name, cost]) => ({ part: 'index' as const, name: name.slice('without:'.length), bytesPerRow: steady - (cost.bytesPerRow ?? 0), share: 0 }))
  const checkpointAdds = total - steady
  const indexTotal = indexes.reduce((sum, part) => sum + part.bytesPerRow, 0)
  // Without the no-indexes run (no ownership), heap and indexes cannot be told apart.
  const heapName = scenarios['no-indexes'] ? 'heap' : 'heap and indexes (not split: no run without indexes)'
  return [
    { part: 'heap', name: heapName, bytesPerRow: heap, share: 0 },
    ...indexes,
    { part: 'fpi', name: 'full-page images', bytesPerRow: checkpointAdds, share: 0 },
    { part: 'other', name: 'other', bytesPerRow: total - heap - indexTotal - checkpointAdds, share: 0 },
  ]
}

/** The name of the first run when its CHECKPOINT could not run (no privilege). */
export const FIRST_RUN = 'first-run'

/** The run the decomposition and the audit read: after-checkpoint, or the first run without one. */
export function firstRunOf(scenarios: Record<string, InsertCost>): InsertCost | undefined {
  return scenarios['after-checkpoint'] ?? scenarios[FIRST_RUN]
}

/** Splits the first run's WAL per row (after a checkpoint, where one could run) into heap, each index, full-page images and the rest. */
export function decompose(scenarios: Record<string, InsertCost>): Decomposition {
  const cold = firstRunOf(scenarios)
  const steady = scenarios.steady
  if (!cold || !steady || !cold.rows || cold.bytesPerRow === null || steady.bytesPerRow === null) {
    throw new WalcostError('BATCH_FAILED', 'the batch inserted no rows into the table, so there is nothing to decompose; check that the batch inserts into the measured table.')
  }
  const total = cold.bytesPerRow
  const byAttribution = cold.breakdown !== null
  const parts: DecompositionPart[] = byAttribution ? attributedParts(cold) : partsFromDifferences(scenarios, cold.bytesPerRow, steady.bytesPerRow)
  for (const part of parts) part.share = total > 0 ? part.bytesPerRow / total : 0
  const heap = parts.find((part) => part.part === 'heap')?.bytesPerRow ?? 0
  const indexTotal = parts.filter((part) => part.part === 'index').reduce((sum, part) => sum + part.bytesPerRow, 0)
  const indexShareOfRecordBytes = heap + indexTotal > 0 ? indexTotal / (heap + indexTotal) : 0
  return { bytesPerRow: total, parts, indexShareOfRecordBytes, method: cold.attribution === 'lsn' ? 'differences' : cold.attribution, summary: summarise(parts, total, indexShareOfRecordBytes, cold.scenario.checkpoint ? 'after a checkpoint' : 'in the first run (no checkpoint)') }
}

function summarise(parts: DecompositionPart[], total: number, indexShareOfRecordBytes: number, when: string): string {
  const indexes = parts.filter((part) => part.part === 'index').sort((a, b) => b.bytesPerRow - a.bytesPerRow)
  const share = (bytes: number) => (total > 0 ? bytes / total : 0)
  const groups: Array<[string, number]> = [
    ['the heap', parts.find((part) => part.part === 'heap')?.bytesPerRow ?? 0],
    ['index maintenance', indexes.reduce((sum, part) => sum + part.bytesPerRow, 0)],
    ['full-page images', parts.find((part) => part.part === 'fpi')?.bytesPerRow ?? 0],
    ['writes to other relations (triggers, foreign keys, sequences)', parts.filter((part) => part.part === 'relation').reduce((sum, part) => sum + part.bytesPerRow, 0)],
  ]
  const [largest, bytes] = groups.reduce((best, group) => (group[1] > best[1] ? group : best))
  const top = indexes[0]
  const topIndex = top ? `index ${top.name} alone is ${percent(top.share)} of WAL` : ''
  if (largest === 'index maintenance' && top) {
    return `index maintenance is ${percent(share(bytes))} of WAL ${when} and ${percent(indexShareOfRecordBytes)} of record bytes; ${topIndex} (${Math.round(total)} bytes a row in all).`
  }
  const lead = `${largest} is ${percent(share(bytes))} of WAL ${when} (${Math.round(total)} bytes a row)`
  return top ? `${lead}; index maintenance is ${percent(indexShareOfRecordBytes)} of record bytes, and ${topIndex}.` : `${lead}.`
}
