import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { DEFAULT_WATCH_INTERVAL_MS } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { parseOptions } from '../core/options.js'
import type { Session } from '../driver/types.js'
import { advanceReadingSlot, onDatabase } from '../measure/lifecycle.js'
import { markWindowEnd } from '../wal/follow.js'
import { readServer, type Server, type WindowSplit, windowSplit } from '../wal/server.js'
import {
  insertPosition,
  readStatWal,
  type StatWalCounters,
  statWalDifference,
  type WalPosition,
} from '../wal/snapshot.js'
import {
  nextStatementSnapshot,
  readStatementSnapshot,
  type StatementSnapshot,
  statementWalOf,
} from '../wal/statement-wal.js'
import type { WalObservation } from './observation.js'
import { observationNotes, observationOf, observeOptionsSchema, readWindow } from './observe.js'
import { nameFiles, type RelationCatalog, readRelationCatalog } from './observe-names.js'
import { WatchTotals } from './watch-totals.js'

const observeShape = observeOptionsSchema.shape

/**
 * Options of {@link watchWal}: the server, how long each interval lasts, and when to stop.
 *
 * @example
 * const options: WatchOptions = { db: process.env.DATABASE_URL, intervalMs: 1_000, onInterval: (o) => console.log(o.window.bytes) }
 */
export const watchOptionsSchema = z.strictObject({
  db: observeShape.db.describe('The server to watch: a connection string, a pg Client or Pool (not PGlite).'),
  connectTimeoutMs: observeShape.connectTimeoutMs,
  lockTimeoutMs: observeShape.lockTimeoutMs,
  statementTimeoutMs: observeShape.statementTimeoutMs,
  signal: observeShape.signal.describe(
    'Ends the watch: the interval under way is closed, read and reported, and the totals returned.',
  ),
  intervalMs: z
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(DEFAULT_WATCH_INTERVAL_MS)
    .describe('How long each interval lasts.'),
  durationMs: z
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('Stop after this long; without it the watch runs until `signal` fires.'),
  onInterval: z
    .custom<(observation: WalObservation<'server'>, sinceStart: WalObservation<'server'>) => unknown>(
      (value) => typeof value === 'function',
      {
        message: 'expected a function',
      },
    )
    .optional()
    .describe(
      "Called with each interval's observation and the totals since the start, in order, awaited; what it throws ends the watch.",
    ),
  flushTimeoutMs: observeShape.flushTimeoutMs,
})

export type WatchOptions = z.input<typeof watchOptionsSchema>
type ParsedWatchOptions = z.output<typeof watchOptionsSchema>

/** One interval, closed but perhaps not yet read. */
interface Interval {
  start: WalPosition
  end: WalPosition
  durationMs: number
  before: RelationCatalog | null
  after: RelationCatalog | null
  /** pg_stat_statements at both ends, where the WAL is not split. */
  statementsBefore: StatementSnapshot | null
  statementsAfter: StatementSnapshot | null
  statWal: StatWalCounters
}

/**
 * What a reader that follows a server across connections (src/traffic/) adds to a watch: where
 * the last connection's reading ended, and the positions as they are known.
 */
export interface WatchHooks {
  /** Start here rather than at the insert position; where the server is behind it (another cluster at the same address), at the insert position. */
  from?: WalPosition | undefined
  /** Where the first interval starts, once connected. */
  onStart?: (start: WalPosition) => void
  /** Each interval's end as it is taken, before its WAL is read. */
  onWindowEnd?: (end: WalPosition) => void
}

/** watchWal without the notebook display; the exported entry point is in api.ts. */
export async function watchWal(options: WatchOptions, hooks: WatchHooks = {}): Promise<WalObservation<'server'>> {
  const parsed = parseOptions(watchOptionsSchema, options)
  // The signal ends the watch cleanly; given to the session, it would cancel the reading under way.
  const { signal: _stop, ...connection } = parsed
  return onDatabase(connection, (session) => watchOnSession(session, parsed, hooks), {
    step: 'following the WAL',
    readFrom: hooks.from?.bytes,
  })
}

async function watchOnSession(
  session: Session,
  options: ParsedWatchOptions,
  hooks: WatchHooks,
): Promise<WalObservation<'server'>> {
  if (session.backend === 'pglite') {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'db: PGlite runs one session, so nothing but walcost could write while it is watched. Watch a PostgreSQL server, or observe a run with observeWal.',
      { field: 'db' },
    )
  }
  const server = await readServer(session)
  const split = windowSplit(server)
  const readable = split !== null
  // pg_walinspect reads on the server, through the watch's own session.
  const reader = split?.by === 'reader' ? ((await session.companion) ?? session) : split ? session : null
  // The reading session's first statement waits for the slot it is making, which holds the WAL
  // from before the first interval until it is read; each read moves it on.
  if (reader) await reader.query('select 1')
  const totals = new WatchTotals()
  let before = readable ? await readRelationCatalog(session) : null
  // Without a split of the WAL, pg_stat_statements is the one source that tells statements apart.
  let statementsBefore = readable ? null : await readStatementSnapshot(session)
  let statBefore = await readStatWal(session, server)
  const inserting = await insertPosition(session)
  let start = hooks.from && hooks.from.bytes <= inserting.bytes ? hooks.from : inserting
  hooks.onStart?.(start)
  const began = performance.now()
  let at = began
  const deadline = options.durationMs === undefined ? Number.POSITIVE_INFINITY : began + options.durationMs
  // Wakes the pause between intervals when the watch is to end: stopped, or a read failed.
  const wake = new AbortController()
  const stop = () => wake.abort()
  options.signal?.addEventListener('abort', stop, { once: true })
  let failure: { error: unknown } | null = null
  let reading: Promise<void> = Promise.resolve()
  try {
    for (let k = 1; ; k++) {
      const due = Math.min(began + k * options.intervalMs, deadline)
      await sleep(Math.max(0, due - performance.now()), undefined, { signal: wake.signal }).catch(() => undefined)
      if (failure) break
      const end = await markWindowEnd(session)
      hooks.onWindowEnd?.(end)
      const now = performance.now()
      const after = readable ? await readRelationCatalog(session) : null
      const statementsAfter = statementsBefore && (await nextStatementSnapshot(session, statementsBefore))
      const statAfter = await readStatWal(session, server)
      // One interval is read while the next one runs, and no more: the memory held stays that of two.
      await reading
      if (failure) break
      const interval = {
        start,
        end,
        durationMs: Math.round(now - at),
        before,
        after,
        statementsBefore,
        statementsAfter,
        statWal: statWalDifference(statBefore, statAfter),
      }
      reading = readInterval(session, reader, server, split, options, interval)
        .then((observation) => {
          totals.add(observation)
          const sinceStart = totals.observation()
          return sinceStart && options.onInterval?.(observation, sinceStart)
        })
        .then(
          () => undefined,
          (error: unknown) => {
            failure = { error }
            stop()
          },
        )
      start = end
      before = after
      statementsBefore = statementsAfter
      statBefore = statAfter
      at = now
      if (wake.signal.aborted || now >= deadline) break
    }
  } finally {
    // Also when a statement of the loop failed: the interval being read finishes (and is reported)
    // before the watch ends, so that nothing is reported after it has.
    await reading
    options.signal?.removeEventListener('abort', stop)
  }
  if (failure) throw (failure as { error: unknown }).error
  const observation = totals.observation()
  if (!observation) throw new WalcostError('QUERY_FAILED', 'the watch ended before its first interval.')
  return observation
}

/** Reads one interval's WAL once flushed, then lets the slot go past it. */
async function readInterval(
  session: Session,
  reader: Session | null,
  server: Server,
  split: WindowSplit,
  options: ParsedWatchOptions,
  interval: Interval,
): Promise<WalObservation<'server'>> {
  const { start, end, before, after } = interval
  if (!reader || !split || !before || !after) {
    const { statementsBefore, statementsAfter } = interval
    const statements =
      statementsBefore && statementsAfter ? await statementWalOf(session, statementsBefore, statementsAfter) : null
    return observationOf(
      start,
      { end, durationMs: interval.durationMs, wal: null, relations: null, statements, notes: [], partial: false },
      interval.statWal,
      server,
      session.backend,
    )
  }
  const wal = await readWindow(reader, server, split, start, end, options.flushTimeoutMs)
  if (split.by === 'reader') await advanceReadingSlot(reader, end.lsn)
  const relations = nameFiles(wal.files, before, after)
  return observationOf(
    start,
    {
      end,
      durationMs: interval.durationMs,
      wal,
      relations,
      statements: null,
      notes: observationNotes(wal, relations, after),
      partial: false,
    },
    interval.statWal,
    server,
    session.backend,
  )
}
