import type { Enclosing } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import type { InsertCost } from './result.js'

/**
 * Where each run of a comparison starts. 'clone': from a copy of the database as it was before the
 * first run (PGlite), so every run sees the same pages, free space and xids. 'ordered': one after
 * another on the table itself, each rolled back; a rollback leaves dead tuples and split pages, so
 * later runs start from a table the earlier ones changed, and the A/A check measures how much.
 */
export type StartingState = 'clone' | 'ordered'

/**
 * The A/A check: the baseline measured once more, after every other run, and its difference from
 * the first. It is the comparison's resolution: differences between runs smaller than it are noise.
 */
export interface AaCheck {
  /** The run measured twice. */
  scenario: string
  records: number
  fpiCount: number
  /** Absolute difference of WAL bytes per row. */
  bytesPerRow: number
  /** bytesPerRow as a share of the first measurement's bytes per row. */
  share: number
}

export interface ComparableRuns {
  startingState: StartingState
  /**
   * Runs `work` from the comparison's starting state. `run` is how many runs went before it on the
   * same pages: 0 on a fresh clone, the run's position when ordered. A batch given as a function of
   * the run, and `count` rows, continue their keys by it, as consecutive production batches would.
   */
  run<T>(work: (session: Session, run: number) => Promise<T>): Promise<T>
}

/** Runs from clones where the session can make them and owns its transaction; ordered otherwise. */
export function comparableRuns(session: Session, enclosing: Enclosing | undefined): ComparableRuns {
  const clone = enclosing === 'savepoint' ? undefined : session.clone?.bind(session)
  let position = 0
  if (!clone) return { startingState: 'ordered', run: (work) => work(session, position++) }
  return {
    startingState: 'clone',
    async run(work) {
      const copy = await clone()
      try {
        return await work(copy, 0)
      } finally {
        await copy.close()
      }
    },
  }
}

/** The difference between a run and the same run measured again. */
export function aaCheck(scenario: string, first: InsertCost, again: InsertCost): AaCheck {
  const bytesPerRow = Math.abs((again.bytesPerRow ?? 0) - (first.bytesPerRow ?? 0))
  return {
    scenario,
    records: Math.abs((again.walRecords ?? 0) - (first.walRecords ?? 0)),
    fpiCount: Math.abs((again.fpiCount ?? 0) - (first.fpiCount ?? 0)),
    bytesPerRow,
    share: first.bytesPerRow ? bytesPerRow / first.bytesPerRow : 0,
  }
}
