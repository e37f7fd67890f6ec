import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { abortedError, throwIfAborted, WalcostError } from '../core/errors.js'
import { counted } from '../core/format.js'
import { abortSignalSchema, batchOptionsSchema, connectionOptionsSchema, parseOptions } from '../core/options.js'
import type { Session } from '../driver/types.js'
import { onDatabase } from '../measure/lifecycle.js'
import { readRecords } from '../wal/attribution.js'
import { followRecords, markWindowEnd, type RecordFollower } from '../wal/follow.js'
import { ObserveTally, type WindowWal } from '../wal/observe-tally.js'
import { readServer, readWalAdvice, type Server, type WindowSplit, walLayout, windowSplit } from '../wal/server.js'
import {
  insertPosition,
  readStatWal,
  type StatWalCounters,
  statWalDifference,
  type WalPosition,
  waitForFlush,
} from '../wal/snapshot.js'
import {
  readStatementSnapshot,
  type StatementSnapshot,
  type StatementsWal,
  statementWalBetween,
} from '../wal/statement-wal.js'
import { windowWithWalinspect } from '../wal/walinspect-window.js'
import type { ObservedRelation, WalObservation } from './observation.js'
import { nameFiles, type RelationCatalog, readRelationCatalog } from './observe-names.js'

/**
 * Options of {@link observeWal}: where, and the window (around `run`, or `durationMs` long).
 *
 * @example
 * const options: ObserveOptions = { db: process.env.DATABASE_URL, durationMs: 10_000 }
 */
export const observeOptionsSchema = z
  .strictObject({
    ...connectionOptionsSchema.shape,
    db: connectionOptionsSchema.shape.db
      .unwrap()
      .describe('The server to observe: a connection string, a pg Client or Pool, or a PGlite instance.'),
    run: z
      .custom<() => unknown>((value) => typeof value === 'function', { message: 'expected a function' })
      .optional()
      .describe(
        'The code to observe: the window opens before it is called and closes once its promise settles. It connects as it likes; WAL from every session counts.',
      ),
    durationMs: z
      .number()
      .int()
      .min(1)
      .max(86_400_000)
      .optional()
      .describe('Observe for this long instead of around `run` (a real server only).'),
    flushTimeoutMs: batchOptionsSchema.shape.flushTimeoutMs,
    stop: abortSignalSchema
      .optional()
      .describe(
        'Ends the window early, where it is: the observation so far is returned, with partial: true (signal, in contrast, aborts the call). Around run, the window still closes when run settles: stop it too.',
      ),
  })
  .superRefine((options, context) => {
    if ((options.run === undefined) === (options.durationMs === undefined)) {
      context.addIssue({
        code: 'custom',
        path: [options.run === undefined ? 'run' : 'durationMs'],
        message: 'give the window as exactly one of run (the code to observe) or durationMs',
      })
    }
  })

export type ObserveOptions = z.input<typeof observeOptionsSchema>
/** What a window needs of the options; the audit's traffic window gives these too. */
export type WindowOptions = Pick<
  z.output<typeof observeOptionsSchema>,
  'run' | 'durationMs' | 'flushTimeoutMs' | 'signal' | 'stop'
>

/** observeWal without the notebook display; the exported entry point is in api.ts. */
export async function observeWal(options: ObserveOptions): Promise<WalObservation<'server'>> {
  const parsed = parseOptions(observeOptionsSchema, options)
  return onDatabase(parsed, (session) => observeOnSession(session, parsed), { step: 'observing the WAL' })
}

/** The WAL read, the catalog at both ends, and where the window ended. */
export interface Reading {
  end: WalPosition
  durationMs: number
  wal: WindowWal | null
  relations: ObservedRelation[] | null
  /** Without the WAL: pg_stat_statements' WAL by statement, or why there is none; null where the WAL was read. */
  statements: StatementsWal | string | null
  notes: string[]
  /** The window was ended early by `stop`. */
  partial: boolean
}

/** observeWal on a session onDatabase opened (with its reading companion). */
export async function observeOnSession(session: Session, options: WindowOptions): Promise<WalObservation<'server'>> {
  const server = await readServer(session)
  if (options.durationMs !== undefined && session.backend === 'pglite') {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'durationMs: PGlite runs one session, so nothing but walcost could write during the window. Pass run (the code to observe) instead.',
      { field: 'durationMs' },
    )
  }
  const split = windowSplit(server)
  const readable = split?.by === 'reader'
  const companion = readable ? ((await session.companion) ?? null) : null
  // The companion's first statement waits for the slot it is making, which holds the WAL from
  // before the window's start until it is read.
  if (companion) await companion.query('select 1')
  const before = split ? await readRelationCatalog(session) : null
  // Without a split of the WAL, pg_stat_statements is the one source that tells statements apart.
  const statementsBefore = split ? null : await readStatementSnapshot(session)
  const statBefore = await readStatWal(session, server)
  throwIfAborted(options.signal)
  const [{ pid } = { pid: 0 }] = await session.query<{ pid: number }>('select pg_backend_pid() as pid')
  const start = await insertPosition(session)
  const began = performance.now()
  // Only a follower tallies as the window runs; without one, readWindow tallies at its end.
  const tally = companion ? new ObserveTally(walLayout(server)) : null
  const follower = companion && tally ? followRecords(companion, server, start, { pid, session }, tally.onRecord) : null
  let reading: Reading
  try {
    reading = await observeWindow(
      session,
      server,
      options,
      start,
      began,
      split,
      tally,
      follower,
      before,
      statementsBefore,
    )
  } catch (error) {
    await follower?.abandon()
    throw error
  }
  const statWal = statWalDifference(statBefore, await readStatWal(session, server))
  return observationOf(start, reading, statWal, server, session.backend)
}

/** A window's observation from what was read of it; without the WAL (`wal` null), its totals only. */
export function observationOf(
  start: WalPosition,
  reading: Reading,
  statWal: StatWalCounters,
  server: Server,
  backend: Session['backend'],
): WalObservation<'server'> {
  const { wal, end } = reading
  const statements = typeof reading.statements === 'string' ? null : reading.statements
  return {
    kind: 'wal-observation',
    window: {
      startLsn: start.lsn,
      endLsn: end.lsn,
      bytes: end.bytes - start.bytes,
      records: wal?.records ?? null,
      fpiCount: wal?.fpiCount ?? null,
      durationMs: reading.durationMs,
      statWal,
    },
    relations: reading.relations,
    fpiReasons: wal?.fpiReasons ?? null,
    transactions: wal?.transactions ?? null,
    unattributed: wal?.unattributed ?? null,
    statements,
    attribution: wal ? 'wal' : 'lsn',
    walSource: wal ? (server.capabilities.walBytes ?? 'walinspect') : statements ? 'statements' : 'totals',
    attributionNote: wal
      ? null
      : `Totals only: this role may not read the WAL files, so the window is not split by relation: ${readWalAdvice(server.capabilities, 'split')}. window.bytes is the LSN distance, statWal what pg_stat_wal counted over the window.${statementsNote(reading.statements)}`,
    notes: reading.partial
      ? [
          `The window was ended early, after ${(reading.durationMs / 1000).toFixed(1)} s: this is what was written until then.`,
          ...reading.notes,
        ]
      : reading.notes,
    partial: reading.partial,
    server: { ...server.facts, backend },
    files: null,
  }
}

/** What the totals-only note says of pg_stat_statements: what it gave, or why it gave nothing. */
function statementsNote(statements: Reading['statements']): string {
  if (statements === null) return ''
  if (typeof statements === 'string') return ` No WAL by statement either: ${statements}.`
  const evicted =
    statements.evicted > 0
      ? ` pg_stat_statements evicted ${counted(statements.evicted, 'entry', 'entries')} meanwhile: an evicted statement's WAL is missing.`
      : ''
  return ` statements is the WAL by statement from pg_stat_statements, a coarser source: a statement counts whole in the window it ends in, and what planning writes, commits, checkpoints and background work count in none, so the statements add up to less than window.bytes.${evicted}`
}

async function observeWindow(
  session: Session,
  server: Server,
  options: WindowOptions,
  start: WalPosition,
  began: number,
  split: WindowSplit,
  tally: ObserveTally | null,
  follower: RecordFollower | null,
  before: RelationCatalog | null,
  statementsBefore: StatementSnapshot | null,
): Promise<Reading> {
  if (options.run) {
    try {
      await options.run()
    } catch (error) {
      if (error instanceof WalcostError) throw error
      throw new WalcostError(
        'RUN_FAILED',
        `run failed (${error instanceof Error ? error.message : String(error)}): nothing was reported. What it wrote stays: observeWal commits and rolls back nothing.`,
        { cause: error },
      )
    }
    throwIfAborted(options.signal)
  } else {
    // A window of hours ends as soon as its reading has failed (finish() below says why), or when
    // the caller stops it.
    const ends = [options.signal, follower?.failed, options.stop].filter((signal) => signal !== undefined)
    await sleep(options.durationMs, undefined, { signal: AbortSignal.any(ends) }).catch((error: unknown) => {
      if (!follower?.failed.aborted && !options.stop?.aborted) throw abortedError(error)
    })
  }
  const partial = options.stop?.aborted ?? false
  const end = await markWindowEnd(session)
  const durationMs = Math.round(performance.now() - began)
  if (!split || !before) {
    const statements = statementsBefore && (await statementWalBetween(session, statementsBefore))
    return { end, durationMs, wal: null, relations: null, statements, notes: [], partial }
  }
  let wal: WindowWal
  if (follower && tally) {
    await follower.finish(end, options.flushTimeoutMs)
    wal = tally.summary(end.bytes - start.bytes)
  } else wal = await readWindow(session, server, split, start, end, options.flushTimeoutMs)
  const after = await readRelationCatalog(session)
  const relations = nameFiles(wal.files, before, after)
  return {
    end,
    durationMs,
    wal,
    relations,
    statements: null,
    notes: observationNotes(wal, relations, after),
    partial,
  }
}

/** A window's WAL once flushed, split by walcost's reader on `session` or by pg_walinspect on the server. */
export async function readWindow(
  session: Session,
  server: Server,
  split: NonNullable<WindowSplit>,
  start: WalPosition,
  end: WalPosition,
  flushTimeoutMs: number,
): Promise<WindowWal> {
  await waitForFlush(session, server, end, flushTimeoutMs, false)
  if (split.by === 'walinspect') return windowWithWalinspect(session, split.schema, start, end)
  const tally = new ObserveTally(walLayout(server))
  await readRecords(session, walLayout(server), start, end, tally.onRecord)
  return tally.summary(end.bytes - start.bytes)
}

/** A checkpoint inside the window explains its images: said when there is one. */
export function checkpointNote(wal: WindowWal): string | null {
  return wal.checkpointRecords > 0
    ? `A checkpoint began or ended during the window (${counted(wal.checkpointRecords, 'checkpoint record')}): each page first changed after its start logged a full-page image (fpiReasons.afterCheckpoint).`
    : null
}

/** What a reader of the observation must know: checkpoints inside it, relations it could not name. */
export function observationNotes(wal: WindowWal, relations: ObservedRelation[], catalog: RelationCatalog): string[] {
  const notes: string[] = []
  const checkpoint = checkpointNote(wal)
  if (checkpoint) notes.push(checkpoint)
  const unnamed = relations.filter((relation) => relation.name === null)
  const elsewhere = new Set(
    unnamed.filter((relation) => relation.databaseOid !== catalog.database).map((relation) => relation.database),
  )
  const here = unnamed.length - unnamed.filter((relation) => relation.databaseOid !== catalog.database).length
  if (elsewhere.size > 0) {
    notes.push(
      `Relations of other databases (${[...elsewhere].map((name) => name ?? 'a dropped one').join(', ')}) are listed by relfilenode: only the connected database's catalog names relations; observe while connected to that database to name them.`,
    )
  }
  if (here > 0) {
    notes.push(
      `${counted(here, 'relation file')} of this database ${here === 1 ? 'is' : 'are'} listed by relfilenode: neither the catalog at the window's start nor at its end names ${here === 1 ? 'it' : 'them'} (created and dropped inside the window, or rewritten more than once).`,
    )
  }
  return notes
}
