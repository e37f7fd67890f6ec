import { z } from 'zod'
import type { Database } from '../core/database.js'
import { WalcostError } from '../core/errors.js'
import { counted, integer, percent } from '../core/format.js'
import {
  batchOptionsSchema,
  exactlyOneBatch,
  parseOptions,
  replayableRows,
  type WithDatabase,
} from '../core/options.js'
import type { Session } from '../driver/types.js'
import { resolveTable } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import { type Part, partsOf } from '../measure/parts.js'
import type { InsertCost } from '../measure/result.js'
import { readSyntheticStart, type SyntheticStart } from '../measure/synthetic.js'
import {
  aaCheck,
  type ComparableRuns,
  type Comparison,
  comparableOptionsShape,
  comparableRuns,
  givenNamesTable,
  measureOn,
  type RunTarget,
  steadyOn,
} from './comparable.js'

/**
 * Options of {@link compareScenarios}: those of measureInsertCost without checkpoint and
 * dropIndexes, which the scenarios set.
 *
 * @example
 * const options: ScenariosOptions = { table: 'device_metrics', count: 100_000, method: 'copy' }
 */
export const scenariosOptionsSchema = batchOptionsSchema
  .extend({
    ...comparableOptionsShape,
    perIndex: z
      .boolean()
      .default(true)
      .describe('Also measure the batch without each index alone (`without:<index>`).'),
  })
  .superRefine(exactlyOneBatch)
  .superRefine(replayableRows('the scenarios'))

export type ScenariosOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof scenariosOptionsSchema>,
  Db
>
export type ParsedScenariosOptions = z.output<typeof scenariosOptionsSchema>

/** One part of the write cost: bytes per row and share of WAL after a checkpoint. */
export interface DecompositionPart {
  part: Part['kind']
  /** 'heap', an index's or another relation's name, 'full-page images' or 'other'. */
  name: string
  /**
   * null when it cannot be told: the full-page images read from the scenarios' differences when the
   * first run's CHECKPOINT could not run (its images are then whatever the server's last one left).
   */
  bytesPerRow: number | null
  /** Of the after-checkpoint WAL per row; the known parts add up to 1; null with bytesPerRow. */
  share: number | null
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

export interface ScenarioComparison extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'scenarios'
  /** By scenarioName: `after-checkpoint` (or `first-run`), `steady`, `no-indexes`, then `without:<index>` for each index. */
  scenarios: Record<string, InsertCost>
  decomposition: Decomposition
}

const REPEATED_KEYS =
  "This batch inserts the same keys in every scenario, beside the dead index entries of the previous scenarios' rolled-back runs, so later scenarios split index pages more than a batch of new keys would. A count batch, or sql given as a function of the run number, continues its keys instead. The decomposition is read from the after-checkpoint run, which sees the table as it was."

/** compareScenarios without the notebook display; the exported entry point is in api.ts. */
export async function compareScenarios(options: ScenariosOptions): Promise<ScenarioComparison> {
  const parsed = parseOptions(scenariosOptionsSchema, options)
  return onDatabase(parsed, (session) => compareOnSession(session, parsed))
}

/**
 * The scenarios on an open session. A caller that measures more runs from the same starting state
 * (the audit) passes its own `comparable` and `syntheticStart`.
 */
export async function compareOnSession(
  session: Session,
  options: ParsedScenariosOptions,
  context: { comparable?: ComparableRuns; syntheticStart?: SyntheticStart } = {},
): Promise<ScenarioComparison> {
  const table = await resolveTable(session, options.table)
  // Read once, so every scenario generates the very same rows.
  const syntheticStart =
    options.count !== undefined ? (context.syntheticStart ?? (await readSyntheticStart(session, table))) : undefined
  const baseline: RunConditions = { run: { kind: 'after-checkpoint' }, checkpoint: true, dropIndexes: false }
  const runs: RunConditions[] = [baseline, { run: { kind: 'steady' }, checkpoint: false, dropIndexes: false }]
  const comparable =
    context.comparable ??
    (await comparableRuns(session, table, {
      runsOn: options.runsOn,
      sampleRows: options.sampleRows,
      realTableNeeded: givenNamesTable(options),
    }))
  // Dropping an index, even for a rolled-back run, needs ownership: of the table, or of its copy.
  const mayDrop = (table.owned || comparable.startingState === 'scratch-copy') && table.indexes.length > 0
  if (mayDrop) runs.push({ run: { kind: 'no-indexes' }, checkpoint: false, dropIndexes: true })
  if (mayDrop && options.perIndex) {
    for (const { name } of table.indexes) {
      runs.push({ run: { kind: 'without-index', index: name }, checkpoint: false, dropIndexes: [name] })
    }
  }
  const measureAt = (target: RunTarget, { checkpoint, dropIndexes }: RunConditions) =>
    measureOn(target, options, { checkpoint, dropIndexes }, syntheticStart)
  const measured = new Map<RunConditions, InsertCost>()
  for (const scenario of runs) {
    const cost = await comparable.run((target) =>
      scenario.checkpoint ? measureAt(target, scenario) : steadyOn(target, (on) => measureAt(on, scenario)),
    )
    measured.set(scenario, cost)
  }
  const again = await comparable.run((target) => measureAt(target, baseline))
  const first = measured.get(baseline) as InsertCost
  // A first run whose CHECKPOINT could not run is not shown as after-checkpoint.
  const checkpointed = first.scenario.checkpoint
  if (!checkpointed) baseline.run = { kind: 'first-run' }
  const named = Object.fromEntries(
    runs.map((scenario) => [scenarioName(scenario.run), measured.get(scenario) as InsertCost]),
  )
  const repeatsKeys =
    comparable.startingState === 'ordered' &&
    (typeof options.sql === 'string' || options.rows !== undefined || options.run !== undefined)
  const notes = [
    ...(checkpointed
      ? []
      : [
          `The first run is shown as first-run, not after-checkpoint: its CHECKPOINT was skipped (${first.skipped.find((entry) => entry.step === 'checkpoint')?.reason ?? 'not allowed'}), so its images are whatever the server's last checkpoint left.`,
        ]),
    ...(repeatsKeys ? [REPEATED_KEYS] : []),
    ...startingNotes(comparable),
    ...(!mayDrop && table.indexes.length > 0
      ? [
          `The scenarios without indexes were skipped: dropping an index, even in a transaction that is rolled back, needs ownership of ${table.quoted} (run as its owner, or a member of the owning role).`,
        ]
      : []),
  ]
  return {
    kind: 'scenarios',
    scenarios: named,
    decomposition: decompose(
      named,
      table.indexes.map((index) => index.name),
    ),
    startingState: comparable.startingState,
    sample: comparable.sample,
    aa: aaCheck(scenarioName(baseline.run), first, again),
    notes,
  }
}

/**
 * The after-checkpoint run's own split by relation: it is the first run, so it sees the table as it
 * was, and its images are exactly what the checkpoint added.
 */
function attributedParts(cold: InsertCost, split: Part[]): DecompositionPart[] {
  return split.map((part) => ({
    part: part.kind,
    name: part.name,
    bytesPerRow: part.bytes / cold.rows,
    share: 0,
  }))
}

/** The field notes' method without pg_walinspect: each part is what leaving it out saves. */
function partsFromDifferences(
  scenarios: Record<string, InsertCost>,
  indexNames: string[],
  total: number,
  steady: number,
  checkpointed: boolean,
): DecompositionPart[] {
  const noIndexes = scenarios[scenarioName({ kind: 'no-indexes' })]
  const heap = noIndexes?.bytesPerRow ?? steady
  const indexes = indexNames.flatMap((index) => {
    const without = scenarios[scenarioName({ kind: 'without-index', index })]
    if (!without) return []
    return [{ part: 'index' as const, name: index, bytesPerRow: steady - (without.bytesPerRow ?? 0), share: 0 }]
  })
  // What a checkpoint adds is the images; without one the first run and steady state differ by noise.
  const checkpointAdds = checkpointed ? total - steady : null
  const indexTotal = indexes.reduce((sum, part) => sum + part.bytesPerRow, 0)
  // Without the no-indexes run (no ownership), heap and indexes cannot be told apart.
  const heapName = noIndexes ? 'heap' : 'heap and indexes (not split: no run without indexes)'
  return [
    { part: 'heap', name: heapName, bytesPerRow: heap, share: 0 },
    ...indexes,
    checkpointAdds === null
      ? { part: 'fpi', name: 'full-page images (unknown: no CHECKPOINT ran)', bytesPerRow: null, share: null }
      : { part: 'fpi', name: 'full-page images', bytesPerRow: checkpointAdds, share: 0 },
    {
      part: 'other',
      name: checkpointAdds === null ? 'other (with any full-page images)' : 'other',
      bytesPerRow: total - heap - indexTotal - (checkpointAdds ?? 0),
      share: 0,
    },
  ]
}

/** What the starting state means for the numbers, when it is not identical for every run. */
export function startingNotes(comparable: ComparableRuns): string[] {
  if (comparable.startingState === 'scratch-copy' && comparable.sample) {
    return [
      ...(comparable.gaps.length > 0
        ? [
            `A scratch copy leaves out ${comparable.gaps.join(' and ')}; runsOn: 'table' (--runs-on table) measures the real table with them, its runs ordered.`,
          ]
        : []),
      `Each run measured a scratch copy of the table holding its newest ${counted(comparable.sample.rows, 'row')} (sampleRows ${integer(comparable.sample.requested)}), built alike inside the run's own transaction and rolled back: the real table was only read. A copy's indexes are as deep as its rows make them, so a much larger table may split its pages a little differently.`,
    ]
  }
  if (comparable.startingState === 'ordered' && comparable.orderedBecause) {
    return [
      `The runs were ordered on the real table (${comparable.orderedBecause}): see the A/A check for how much they drift.`,
    ]
  }
  return []
}

/**
 * One run of a comparison. `first-run` is the after-checkpoint run whose CHECKPOINT could not run
 * (no privilege): it is never shown under a condition that did not hold.
 */
export type ScenarioRun =
  | { kind: 'after-checkpoint' | 'first-run' | 'steady' | 'no-indexes' | 'without-drop-candidates' | 'as-given' }
  | { kind: 'without-index'; index: string }
  | { kind: 'fillfactor'; fillfactor: number }

/** What a run changes: the measurement's options. */
interface RunConditions {
  run: ScenarioRun
  checkpoint: boolean
  dropIndexes: boolean | string[]
}

/** A run's key in `scenarios`: the one place these names are written. */
export function scenarioName(run: ScenarioRun): string {
  if (run.kind === 'without-index') return `without:${run.index}`
  return run.kind === 'fillfactor' ? `fillfactor:${run.fillfactor}` : run.kind
}

/** The run the decomposition and the audit read: after-checkpoint, or the first run without one. */
export function firstRunOf(scenarios: Record<string, InsertCost>): InsertCost | undefined {
  return scenarios[scenarioName({ kind: 'after-checkpoint' })] ?? scenarios[scenarioName({ kind: 'first-run' })]
}

/** Splits the first run's WAL per row (after a checkpoint, where one could run) into heap, each index, full-page images and the rest. */
export function decompose(scenarios: Record<string, InsertCost>, indexNames: string[]): Decomposition {
  const cold = firstRunOf(scenarios)
  const steady = scenarios[scenarioName({ kind: 'steady' })]
  if (!cold || !steady || !cold.rows || cold.bytesPerRow === null || steady.bytesPerRow === null) {
    throw new WalcostError(
      'BATCH_FAILED',
      'the batch inserted no rows into the table, so there is nothing to decompose; check that the batch inserts into the measured table.',
    )
  }
  const total = cold.bytesPerRow
  const split = partsOf(cold)
  const parts: DecompositionPart[] = split
    ? attributedParts(cold, split)
    : partsFromDifferences(scenarios, indexNames, cold.bytesPerRow, steady.bytesPerRow, cold.scenario.checkpoint)
  for (const part of parts) part.share = part.bytesPerRow === null ? null : total > 0 ? part.bytesPerRow / total : 0
  const heap = known(parts.find((part) => part.part === 'heap'))
  const indexTotal = parts.filter((part) => part.part === 'index').reduce((sum, part) => sum + known(part), 0)
  const indexShareOfRecordBytes = heap + indexTotal > 0 ? indexTotal / (heap + indexTotal) : 0
  return {
    bytesPerRow: total,
    parts,
    indexShareOfRecordBytes,
    method: cold.attribution === 'lsn' ? 'differences' : cold.attribution,
    summary: summarise(
      parts,
      total,
      indexShareOfRecordBytes,
      cold.scenario.checkpoint ? 'after a checkpoint' : 'in the first run (no checkpoint)',
    ),
  }
}

/** A part's bytes a row where sums need one: an unknown part counts as nothing there, and is never printed as a number. */
const known = (part: DecompositionPart | undefined) => part?.bytesPerRow ?? 0

function summarise(parts: DecompositionPart[], total: number, indexShareOfRecordBytes: number, when: string): string {
  const indexes = parts.filter((part) => part.part === 'index').sort((a, b) => known(b) - known(a))
  const share = (value: number) => (total > 0 ? value / total : 0)
  const groups: Array<[string, number]> = [
    ['the heap', known(parts.find((part) => part.part === 'heap'))],
    ['index maintenance', indexes.reduce((sum, part) => sum + known(part), 0)],
    ['full-page images', known(parts.find((part) => part.part === 'fpi'))],
    [
      'writes to other relations (triggers, foreign keys, sequences)',
      parts.filter((part) => part.part === 'relation').reduce((sum, part) => sum + known(part), 0),
    ],
  ]
  const [largest, bytes] = groups.reduce((best, group) => (group[1] > best[1] ? group : best))
  const top = indexes[0]
  const topIndex = top ? `index ${top.name} alone is ${percent(top.share ?? 0)} of WAL` : ''
  if (largest === 'index maintenance' && top) {
    return `index maintenance is ${percent(share(bytes))} of WAL ${when} and ${percent(indexShareOfRecordBytes)} of record bytes; ${topIndex} (${Math.round(total)} bytes a row in all).`
  }
  const lead = `${largest} is ${percent(share(bytes))} of WAL ${when} (${Math.round(total)} bytes a row)`
  return top
    ? `${lead}; index maintenance is ${percent(indexShareOfRecordBytes)} of record bytes, and ${topIndex}.`
    : `${lead}.`
}
