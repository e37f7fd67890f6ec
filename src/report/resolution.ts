import { counted, oneDecimal } from '../format.js'
import type { AaCheck, StartingState } from '../measure/comparable.js'

/** Where a comparison's runs started, and its A/A check: the sentence every output format carries. */
export function resolutionSentence(startingState: StartingState, aa: AaCheck): string {
  const start =
    startingState === 'clone'
      ? 'Every run started from its own copy of the database as it was before the first.'
      : 'The runs followed one another on the table, each rolled back: each started from the table as the runs before left it (dead tuples, split pages).'
  return `${start} A/A check: ${aa.scenario} measured again, last, differs by ${counted(aa.records, 'record')}, ${counted(aa.fpiCount, 'full-page image')} and ${oneDecimal(aa.bytesPerRow)} bytes a row (${oneDecimal(aa.share * 100)}%); differences between runs no larger than that are noise.`
}

/** A difference between two runs is noise when the A/A check moved as much. */
export function isNoise(difference: number, aa: AaCheck): boolean {
  return Math.abs(difference) <= aa.bytesPerRow
}
