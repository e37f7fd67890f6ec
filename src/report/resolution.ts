import type { AaCheck, Comparison } from '../compare/comparable.js'
import { counted, oneDecimal, size } from '../core/format.js'
import type { ServerCost } from '../wal/snapshot.js'

/** Where the runs started, in one sentence. */
export function startingSentence({ startingState, sample }: Pick<Comparison, 'startingState' | 'sample'>): string {
  if (startingState === 'clone')
    return 'Every run started from its own copy of the database as it was before the first.'
  if (startingState === 'scratch-copy') {
    return `Every run measured its own scratch copy of the table, built alike from its newest ${counted(sample?.rows ?? 0, 'row')} inside the run's rolled-back transaction.`
  }
  return 'The runs followed one another on the table, each rolled back: each started from the table as the runs before left it (dead tuples, split pages).'
}

/** Where a comparison's runs started, and its A/A check: the sentence every output format carries. */
export function resolutionSentence(comparable: Pick<Comparison, 'startingState' | 'sample' | 'aa'>): string {
  const { aa } = comparable
  const start = startingSentence(comparable)
  const counts =
    aa.records === null || aa.fpiCount === null
      ? 'an unknown number of records and full-page images (they could not be counted)'
      : `${counted(aa.records, 'record')}, ${counted(aa.fpiCount, 'full-page image')}`
  return `${start} A/A check: ${aa.scenario} measured again, last, differs by ${counts} and ${oneDecimal(aa.bytesPerRow)} bytes a row (${oneDecimal(aa.share * 100)}%); differences between runs no larger than that are noise.`
}

/** A run's bytes a row against the first run's, marked as noise within the A/A check: '+12.3', '-0.4 (noise)'. */
export function versusFirst(first: number, bytesPerRow: number | null, aa: AaCheck): string {
  if (bytesPerRow === null) return '-'
  const difference = bytesPerRow - first
  if (difference === 0) return '0'
  return `${difference > 0 ? '+' : ''}${oneDecimal(difference)}${isNoise(difference, aa) ? ' (noise)' : ''}`
}

/** A difference between two runs is noise when the A/A check moved as much. */
export function isNoise(difference: number, aa: AaCheck): boolean {
  return Math.abs(difference) <= aa.bytesPerRow
}

/** What the runs cost the server, in one sentence; none where they ran on clones (PGlite). */
export function serverCostSentences(cost: ServerCost | null): string[] {
  if (!cost) return []
  const checkpoints =
    cost.checkpointsRequested === null
      ? 'checkpoints requested unknown (the role may not read the checkpoint counters)'
      : `${counted(cost.checkpointsRequested, 'checkpoint')} requested`
  return [
    `The runs cost the server ${size(cost.walBytes)} of WAL (the insert position's advance, other sessions' WAL included) and ${checkpoints}.`,
  ]
}
