import { z } from 'zod'
import { DEFAULT_RUNS_ON, DEFAULT_SAMPLE_ROWS } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import type { ParsedMeasureOptions } from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import type { Table } from '../measure/catalog.js'
import { measureOnSession } from '../measure/measure.js'
import type { InsertCost } from '../measure/result.js'
import type { SyntheticStart } from '../measure/synthetic.js'
import { buildScratchCopy, ON_THE_TABLE, requireTablePrivileges, type Storage, scratchCopyFitness } from './scratch.js'

/**
 * Where each run of a comparison starts.
 * - 'clone' (PGlite): a copy of the whole database as it was before the first run.
 * - 'scratch-copy' (a real server): a copy of the table, built alike for every run from the same
 *   newest rows inside the run's own transaction, and rolled back with it.
 * - 'ordered' (runsOn 'table' only): the runs follow one another on the table itself, each rolled back; a rollback
 *   leaves dead tuples and split pages, so later runs start from a table the earlier ones changed,
 *   and the A/A check measures how much.
 */
export type StartingState = 'clone' | 'scratch-copy' | 'ordered'

/** The options of every comparison (scenarios, remedies, audit) that say where its runs start. */
export const comparableOptionsShape = {
  runsOn: z
    .enum(['copy', 'table'])
    .default(DEFAULT_RUNS_ON)
    .describe(
      "Where the runs start: 'copy', each from an identical copy (a clone of PGlite's database; on a real server a scratch copy of the table built in the run's rolled-back transaction), refusing before any run where no copy can be made; 'table', one after another on the real table, each rolled back, so later runs see what earlier ones left: only this writes to the real table.",
    ),
  sampleRows: z
    .number()
    .int()
    .min(0)
    .max(10_000_000)
    .default(DEFAULT_SAMPLE_ROWS)
    .describe('Newest rows of the table copied into each scratch copy on a real server (0: an empty copy).'),
}

export type RunsOn = 'copy' | 'table'

/**
 * The A/A check: the baseline measured once more, after every other run, and its difference from
 * the first. It is the comparison's resolution: differences between runs smaller than it are noise.
 */
export interface AaCheck {
  /** The run measured twice. */
  scenario: string
  /** Absolute difference of our WAL records; null when either run could not count them (no WAL access). */
  records: number | null
  /** Absolute difference of our full-page images; null when either run could not count them. */
  fpiCount: number | null
  /** Absolute difference of WAL bytes per row. */
  bytesPerRow: number
  /** bytesPerRow as a share of the first measurement's bytes per row. */
  share: number
}

/** What every comparison carries about its runs: where they started, and how exactly they repeat. */
export interface Comparison {
  /** Where each run started: a clone of the database (PGlite), a scratch copy of the table (a real server), or the table itself, ordered. */
  startingState: StartingState
  /** Rows copied into each scratch copy (startingState 'scratch-copy'), and how many were asked for; null otherwise. */
  sample: { rows: number; requested: number } | null
  /** The first run measured again, last: the comparison's resolution. */
  aa: AaCheck
  /** What to keep in mind: where the runs started and why, and what the comparison could not do. */
  notes: string[]
}

/** What one run measures on. */
export interface RunTarget {
  session: Session
  /** The table to name in the measurement's options: the real one, or its scratch copy. */
  table: string
  /** The name of a real index on `table`. */
  indexName(real: string): string
  /**
   * How many runs went before this one on the same pages: 0 from a fresh starting state, the run's
   * position when ordered. `count` rows and a batch given as a function continue their keys by it.
   */
  run: number
  /** The measurement runs inside the run's transaction (a scratch copy lives there). */
  inTransaction: boolean
  /** The run starts right after a checkpoint: a run without one needs a warm-up to be steady. */
  freshCheckpoint: boolean
}

export interface ComparableRuns {
  startingState: StartingState
  /** Rows copied into each scratch copy, and how many were asked for; null otherwise. */
  sample: { rows: number; requested: number } | null
  /** Why the runs are ordered rather than from identical states, when they are. */
  orderedBecause: string | null
  /** What a scratch copy leaves out of the numbers (triggers, foreign keys), in words. */
  gaps: string[]
  /**
   * Measures on a fresh starting state; the result names the real table and indexes. `storage`
   * rewrites the table with other storage parameters first (a clone or a scratch copy only).
   */
  run(work: (target: RunTarget) => Promise<InsertCost>, storage?: Storage): Promise<InsertCost>
}

export interface ComparableOptions {
  runsOn: RunsOn
  sampleRows: number
  /** Why the runs cannot use a copy (SQL that names the real table), when they cannot. */
  realTableNeeded?: string | undefined
  /**
   * The privileges the runs' batches need on the real table with runsOn 'table': INSERT by default,
   * none where the batch is SQL text or the app's code, whose writes cannot be told beforehand.
   */
  writes?: string[]
}

/**
 * Runs from clones on PGlite, from scratch copies on a real server, and ordered on the real table
 * only with runsOn 'table'. Where no copy can stand in, it fails before any run.
 */
export async function comparableRuns(
  session: Session,
  table: Table,
  options: ComparableOptions,
): Promise<ComparableRuns> {
  const realTable = (run: number): RunTarget => ({
    session,
    table: table.quoted,
    indexName: (real) => real,
    run,
    inTransaction: false,
    freshCheckpoint: false,
  })
  const ordered = (because: string | null): ComparableRuns => {
    let position = 0
    return {
      startingState: 'ordered',
      sample: null,
      orderedBecause: because,
      gaps: [],
      run(work, storage) {
        if (storage) {
          throw new WalcostError(
            'INVALID_OPTIONS',
            'runs on the real table cannot rewrite it with other storage parameters; measure on a copy (runsOn: copy).',
          )
        }
        return work(realTable(position++))
      },
    }
  }
  if (options.runsOn === 'table') {
    await requireTablePrivileges(session, table, options.writes ?? (options.realTableNeeded ? [] : ['INSERT']))
    return ordered('runsOn is table: the runs measure the real table, one after another')
  }
  const clone = session.clone?.bind(session)
  if (clone) {
    return {
      startingState: 'clone',
      sample: null,
      orderedBecause: null,
      gaps: [],
      async run(work, storage) {
        const copy = await clone()
        try {
          if (storage) {
            // Two statements: VACUUM cannot run in the implicit transaction of a multi-statement query.
            await copy.exec(`alter table ${table.quoted} set (fillfactor = ${storage.fillfactor})`)
            await copy.exec(`vacuum full ${table.quoted}`)
          }
          // Opening a copied data directory ends with a checkpoint.
          return await work({ ...realTable(0), session: copy, freshCheckpoint: !storage })
        } finally {
          await copy.close()
        }
      },
    }
  }
  // A comparison on a real server writes to the real table only when the caller said so: where a
  // copy cannot stand in, it refuses before any batch runs, rather than fall back to the table.
  if (options.realTableNeeded) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      `the runs cannot measure a scratch copy of ${table.quoted}: ${options.realTableNeeded}. ${ON_THE_TABLE}`,
      { field: 'runsOn' },
    )
  }
  const { refusal, gaps } = await scratchCopyFitness(session, table)
  if (refusal) throw refusal
  const sample = { rows: 0, requested: options.sampleRows }
  return {
    startingState: 'scratch-copy',
    sample,
    orderedBecause: null,
    gaps,
    run: (work, storage) =>
      rolledBack(session, 'transaction', async () => {
        const copy = await buildScratchCopy(session, table, options.sampleRows, storage)
        sample.rows = copy.rows
        const cost = await work({ ...realTable(0), table: copy.quoted, indexName: copy.indexName, inTransaction: true })
        return copy.asReal(cost)
      }),
  }
}

/** What a run changes in the measurement's options. */
export interface RunChanges {
  checkpoint: boolean
  /** true: every index; names: real indexes, mapped to the target's. */
  dropIndexes: boolean | string[]
  method?: ParsedMeasureOptions['method']
  batchSize?: number
  settings?: Record<string, string>
}

/** One measurement on a run's target: its table, its indexes, its keys and its transaction. */
export function measureOn(
  target: RunTarget,
  options: Omit<ParsedMeasureOptions, 'checkpoint' | 'dropIndexes'>,
  { settings, ...changes }: RunChanges,
  syntheticStart: SyntheticStart | undefined,
): Promise<InsertCost> {
  const dropIndexes = Array.isArray(changes.dropIndexes)
    ? changes.dropIndexes.map(target.indexName)
    : changes.dropIndexes
  return measureOnSession(
    target.session,
    { ...options, ...changes, table: target.table, dropIndexes },
    {
      enclosing: target.inTransaction ? 'savepoint' : 'transaction',
      syntheticStart: syntheticStart && { ...syntheticStart, firstRow: target.run * (options.count ?? 0) },
      run: target.run,
      ...(settings && { settings }),
    },
  )
}

/**
 * A run without a CHECKPOINT measures pages already changed since the last one. A fresh clone
 * starts right after one, so the same batch, rolled back, changes them first and is measured the
 * second time; elsewhere the pages were changed already (by building the copy, or earlier runs).
 */
export async function steadyOn(
  target: RunTarget,
  measure: (target: RunTarget) => Promise<InsertCost>,
): Promise<InsertCost> {
  if (!target.freshCheckpoint) return measure(target)
  await measure(target)
  return measure({ ...target, run: target.run + 1 })
}

/**
 * Why a given batch keeps the runs on the real table: SQL text and the app's code name their table,
 * while SQL given as a function of (run, table) is given each run's.
 */
export function givenNamesTable(batch: { sql?: unknown; run?: unknown }): string | undefined {
  if (typeof batch.sql === 'string') {
    return 'an sql batch given as text names its table; given as a function of (run, table) it can write to a copy'
  }
  if (batch.run !== undefined) {
    return "a run batch is the app's own code, which writes to the table by its own name, not to a copy"
  }
  return undefined
}

type Repeatable = Pick<InsertCost, 'walRecords' | 'fpiCount' | 'bytesPerRow'>

/** The difference between a run and the same run measured again. */
export function aaCheck(scenario: string, first: Repeatable, again: Repeatable): AaCheck {
  const bytesPerRow = Math.abs((again.bytesPerRow ?? 0) - (first.bytesPerRow ?? 0))
  const difference = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.abs(a - b))
  return {
    scenario,
    records: difference(again.walRecords, first.walRecords),
    fpiCount: difference(again.fpiCount, first.fpiCount),
    bytesPerRow,
    share: first.bytesPerRow ? bytesPerRow / first.bytesPerRow : 0,
  }
}
