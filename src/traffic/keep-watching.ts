import { setTimeout as sleep } from 'node:timers/promises'
import { RECONNECT_BACKOFF_MS } from '../core/defaults.js'
import { fromServerError, type WalcostErrorCode } from '../core/errors.js'
import { parseLsn } from '../decode/reader.js'
import type { WalPosition } from '../wal/snapshot.js'
import type { WalObservation } from './observation.js'
import { type WatchOptions, watchWal } from './watch.js'

/** Failures no new connection mends: the options or the server are wrong, not the moment. */
const FATAL: ReadonlySet<WalcostErrorCode> = new Set(['INVALID_OPTIONS', 'UNSUPPORTED_SERVER'])

/** What a reader that outlives its connections hears of them, besides each interval. */
export interface KeepWatchingEvents {
  /** Each interval's observation, in order, once read; what it throws ends the watching. */
  onInterval: (observation: WalObservation<'server'>) => unknown
  /** Connected and watching, from `start`. */
  onUp?: (start: WalPosition) => void
  /** The connection or its reading failed: another is tried after `retryInMs`. */
  onDown?: (error: Error, retryInMs: number) => void
  /** WAL between two positions that was not read: the server had removed it before a new connection could. */
  onMissed?: (from: WalPosition, to: WalPosition) => void
  /** An interval's end as it is taken, before its WAL is read. */
  onWindowEnd?: (end: WalPosition) => void
}

/**
 * A watch that outlives its connections, until `signal` fires: after a dropped connection or a
 * server restart, a new connection after a bounded backoff, reading on from the end of the last
 * interval read, so that no WAL is counted twice. Where the server removed that WAL meanwhile (no
 * slot held it once the session that made it ended), the next connection starts at the insert
 * position and the gap is reported to `onMissed`. Only options and servers walcost cannot follow
 * end it (the error is thrown); ended by `signal`, it resolves.
 */
export async function keepWatching(
  options: Omit<WatchOptions, 'onInterval' | 'durationMs'> & { signal: AbortSignal },
  events: KeepWatchingEvents,
): Promise<void> {
  const { signal } = options
  let readTo: WalPosition | null = null
  let lost = false
  let backoff: number = RECONNECT_BACKOFF_MS.min
  // Thrown by the caller's own onInterval: not the connection's fault, so not tried again.
  let theirs: { error: unknown } | null = null
  while (!signal.aborted) {
    try {
      await watchWal(
        {
          ...options,
          onInterval: async (observation) => {
            backoff = RECONNECT_BACKOFF_MS.min
            readTo = { lsn: observation.window.endLsn, bytes: parseLsn(observation.window.endLsn) }
            try {
              return await events.onInterval(observation)
            } catch (error) {
              theirs = { error }
              throw error
            }
          },
        },
        {
          from: lost ? undefined : (readTo ?? undefined),
          onStart: (start) => {
            if (readTo && start.bytes > readTo.bytes) events.onMissed?.(readTo, start)
            readTo = start
            lost = false
            events.onUp?.(start)
          },
          ...(events.onWindowEnd && { onWindowEnd: events.onWindowEnd }),
        },
      )
    } catch (error) {
      if (theirs) throw (theirs as { error: unknown }).error
      if (signal.aborted) return
      const failure = fromServerError(error, 'following the WAL')
      if (FATAL.has(failure.code)) throw failure
      // The WAL from where the last reading ended is gone: the next connection starts where the server is.
      lost = failure.code === 'WAL_UNREADABLE'
      events.onDown?.(failure, backoff)
      await sleep(backoff, undefined, { signal }).catch(() => undefined)
      backoff = Math.min(backoff * 2, RECONNECT_BACKOFF_MS.max)
    }
  }
}
