import { watchWal } from '../api.js'
import type { WalObservation } from '../measure/observation.js'
import type { WatchOptions } from '../measure/watch.js'
import { formatResult } from '../report/text.js'
import { topScreen } from '../report/top-view.js'
import { millisecondsFlag } from './command-line.js'

/** Relations shown when the output is not a terminal (or it does not say how tall it is). */
const PIPED_ROWS = 20
/** Lines of the screen that are not relations: the head, the table's header and rule, the rest. */
const SCREEN_LINES = 7
const CLEAR_SCREEN = '\x1b[H\x1b[2J'

/** --interval S and --seconds N as the watch's intervalMs and durationMs. */
export function topInput(input: Record<string, unknown>, values: Record<string, unknown>): Record<string, unknown> {
  const intervalMs = millisecondsFlag(values, 'interval')
  const durationMs = millisecondsFlag(values, 'seconds')
  return {
    ...input,
    ...(intervalMs !== undefined && { intervalMs }),
    ...(durationMs !== undefined && { durationMs }),
  }
}

/**
 * Runs the watch until --seconds N pass or SIGINT: each interval as a screen refreshed in place on
 * a terminal, as plain lines when piped, or with --json as one line of JSON. Returns the totals as
 * text (nothing more with --json: the lines are the output).
 */
export async function runTop(options: WatchOptions, asJson: boolean): Promise<{ text: string | undefined }> {
  const stop = new AbortController()
  const onSigint = () => stop.abort()
  process.once('SIGINT', onSigint)
  const terminal = process.stdout.isTTY === true && !asJson
  let noteShown = false
  let totals: WalObservation
  try {
    totals = await watchWal({
      ...options,
      signal: stop.signal,
      onInterval: (interval, sinceStart) => {
        if (asJson) {
          process.stdout.write(`${JSON.stringify(interval)}\n`)
          return
        }
        const rows = terminal ? Math.max((process.stdout.rows ?? 0) - SCREEN_LINES, 5) : PIPED_ROWS
        // Lines that scroll say the grant's paragraph once; a screen refreshed in place says it on every screen.
        const screen = topScreen(interval, sinceStart, rows, { noteShown })
        noteShown ||= !terminal && interval.attributionNote !== null
        process.stdout.write(terminal ? `${CLEAR_SCREEN}${screen}\n` : `${screen}\n\n`)
      },
    })
  } finally {
    process.removeListener('SIGINT', onSigint)
  }
  return { text: asJson ? undefined : `Totals since start:\n${formatResult(totals)}` }
}
