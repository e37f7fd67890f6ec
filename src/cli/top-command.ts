import { DEFAULT_RECONNECT_MS, DEFAULT_WATCH_INTERVAL_MS } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { formatResult } from '../report/text.js'
import { topScreen } from '../report/top-view.js'
import { keepWatching } from '../traffic/keep-watching.js'
import type { WalObservation } from '../traffic/observation.js'
import type { WatchOptions } from '../traffic/watch.js'
import { watchOptionsSchema } from '../traffic/watch.js'
import { WatchTotals } from '../traffic/watch-totals.js'
import { command, connection, option } from './command.js'
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
 * A stretch of the server's WAL top did not read, said where it happened: the connection was lost
 * (a restart, a network failure) and a new one began reading at `to`. `missedBytes` is 0 where the
 * WAL between was still there to read; --json prints it as a line of its own.
 */
export interface TopGap {
  kind: 'wal-gap'
  /** Where reading stopped and where it began again. */
  from: string | null
  to: string
  missedBytes: number
  /** How long top was without a connection. */
  downMs: number
  /** What ended the connection. */
  reason: string
}

/**
 * Runs the watch until --seconds N pass or SIGINT: each interval as a screen refreshed in place on
 * a terminal, as plain lines when piped, or with --json as one line of JSON. A lost connection or a
 * server restart does not end it: it connects again with a bounded backoff, for at most
 * --reconnect-seconds, and says where it stopped reading and what it missed. Returns the totals
 * as text (nothing more with --json: the lines are the output); the totals are printed even when
 * it gives up.
 */
export async function runTop(
  options: WatchOptions,
  asJson: boolean,
  reconnectMs = DEFAULT_RECONNECT_MS,
): Promise<{ text: string | undefined; failure: WalcostError | null }> {
  const { durationMs, onInterval: _unused, ...watch } = options
  const stop = new AbortController()
  const onSigint = () => stop.abort()
  process.once('SIGINT', onSigint)
  const ending = durationMs === undefined ? null : setTimeout(() => stop.abort(), durationMs)
  const terminal = process.stdout.isTTY === true && !asJson
  const totals = new WatchTotals()
  let noteShown = false
  let readTo: string | null = null
  let connected = false
  let down: { since: number; reason: string; giveUp: NodeJS.Timeout } | null = null
  let missed = { from: null as string | null, bytes: 0 }
  let failure: WalcostError | null = null
  const print = (line: string) => process.stdout.write(`${line}\n`)
  try {
    await keepWatching(
      { ...watch, signal: stop.signal },
      {
        onInterval: (interval: WalObservation<'server'>) => {
          // The gap is said once reading has begun again: a connection that came up and failed
          // again at once (its WAL gone since) is part of the same gap.
          if (down) {
            clearTimeout(down.giveUp)
            const gap: TopGap = {
              kind: 'wal-gap',
              from: missed.from,
              to: interval.window.startLsn,
              missedBytes: missed.bytes,
              downMs: Math.round(performance.now() - down.since),
              reason: down.reason,
            }
            down = null
            if (asJson) print(JSON.stringify(gap))
            else {
              const lost =
                gap.missedBytes > 0
                  ? `${gap.missedBytes.toLocaleString('en-US')} bytes of WAL from ${gap.from} were not read`
                  : 'no WAL was missed'
              process.stderr.write(
                `walcost top: reading again after ${(gap.downMs / 1000).toFixed(1)} s, from ${gap.to}; ${lost}.\n`,
              )
            }
          }
          totals.add(interval)
          readTo = interval.window.endLsn
          if (asJson) return print(JSON.stringify(interval))
          const rows = terminal ? Math.max((process.stdout.rows ?? 0) - SCREEN_LINES, 5) : PIPED_ROWS
          // Lines that scroll say the grant's paragraph once; a screen refreshed in place says it on every screen.
          const screen = topScreen(interval, totals.observation() ?? interval, rows, { noteShown })
          noteShown ||= !terminal && interval.attributionNote !== null
          process.stdout.write(terminal ? `${CLEAR_SCREEN}${screen}\n` : `${screen}\n\n`)
        },
        onDown: (error, retryInMs) => {
          // A server top never reached is a mistake to report, not a restart to wait out.
          if (!connected) {
            failure = error instanceof WalcostError ? error : new WalcostError('CONNECTION_FAILED', error.message)
            stop.abort()
            return
          }
          if (down) down.reason = error.message
          else {
            const giveUp = setTimeout(() => {
              failure = new WalcostError(
                'CONNECTION_FAILED',
                `walcost top gave up after ${Math.round(reconnectMs / 1000)} s without the server (${error.message}); raise --reconnect-seconds to wait longer.`,
                { cause: error },
              )
              stop.abort()
            }, reconnectMs)
            down = { since: performance.now(), reason: error.message, giveUp }
            missed = { from: readTo, bytes: 0 }
          }
          process.stderr.write(
            `walcost top: the connection was lost (${error.message}); connecting again in ${Math.round(retryInMs / 1000)} s.\n`,
          )
        },
        onMissed: (from, to) => {
          missed.bytes += to.bytes - from.bytes
        },
        onUp: () => {
          connected = true
        },
      },
    )
  } finally {
    process.removeListener('SIGINT', onSigint)
    if (ending) clearTimeout(ending)
    if (down) clearTimeout((down as { giveUp: NodeJS.Timeout }).giveUp)
  }
  const sum = totals.observation()
  const text = asJson || !sum ? undefined : `Totals since start:\n${formatResult(sum)}`
  return { text, failure }
}

export default command({
  schema: watchOptionsSchema,
  skip: ['db', 'signal', 'intervalMs', 'durationMs', 'onInterval'],
  extra: [
    connection,
    option(
      'json',
      "--json\n      one line of JSON an interval: that interval's wal-observation (the library's result object), its window the interval's",
      'boolean',
    ),
    option(
      'interval',
      `--interval S\n      seconds each interval lasts (default: ${DEFAULT_WATCH_INTERVAL_MS / 1000})`,
    ),
    option('seconds', '--seconds N\n      stop after N seconds (default: at Ctrl-C), printing the totals'),
    option(
      'reconnect-seconds',
      `--reconnect-seconds N\n      after a lost connection or a server restart, go on connecting again for N seconds before giving up, printing the totals (default: ${DEFAULT_RECONNECT_MS / 1000})`,
    ),
  ],
  prepare: async (input, values) => topInput(input, values),
  async run(options, values) {
    const { text, failure } = await runTop(
      options,
      values.json === true,
      millisecondsFlag(values, 'reconnect-seconds') ?? DEFAULT_RECONNECT_MS,
    )
    // The totals of what was read come first, then why top ended.
    if (failure) {
      if (text) process.stdout.write(`${text}\n`)
      throw failure
    }
    return { json: undefined, text, exitCode: 0 }
  },
})
