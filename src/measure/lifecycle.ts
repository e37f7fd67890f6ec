import { DEFAULT_FLUSH_TIMEOUT_MS } from '../core/defaults.js'
import { describeError, fromServerError, sqlStateOf } from '../core/errors.js'
import { type ParsedConnectionOptions, sessionLimits } from '../core/options.js'
import { parseLsn } from '../decode/reader.js'
import { cleanUp } from '../driver/clean-up.js'
import { withSession } from '../driver/open.js'
import type { Session } from '../driver/types.js'
import { attachWalStream, WalStream, walStreamOf } from '../wal/replication.js'
import { readCapabilities } from '../wal/server.js'

/**
 * What every entry point does around its work: a session on `db` (cancelled when `signal` fires,
 * always closed), `setup` run first and, for work that reads WAL back, that WAL reserved.
 */
export async function onDatabase<T>(
  options: ParsedConnectionOptions & { setup?: string | undefined; flushTimeoutMs?: number | undefined },
  work: (session: Session) => Promise<T>,
  {
    readsWal = true,
    step = 'measuring',
    readFrom,
  }: {
    readsWal?: boolean
    step?: string
    /** Where the work's reading begins, when it begins before the server's flushed position (a watch that reads on). */
    readFrom?: number | undefined
  } = {},
): Promise<T> {
  // The reading session closes alongside the first one, not before it: each waits for its backend
  // to exit. Its failure (a cancel as its slot is dropped) fails a call that had not failed before.
  let readerClosed: Promise<unknown> = Promise.resolve(null)
  let result: T
  try {
    result = await withSession(options.db, sessionLimits(options), options.signal, step, async (session) => {
      await runSetup(session, options.setup)
      if (!readsWal || session.backend !== 'pg') return work(session)
      return withWalReading(session, options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS, readFrom, work, (closing) => {
        readerClosed = closing.then(
          () => null,
          (error: unknown) => error,
        )
      })
    })
  } catch (error) {
    await readerClosed
    throw error
  }
  const failure = await readerClosed
  if (failure !== null) throw fromServerError(failure, 'closing the session that read the WAL')
  return result
}

/**
 * On a real server, a second session reads each batch's WAL while the batch runs (wal/follow.ts),
 * where one can be opened at once and the role may read the WAL. It connects while the first
 * session reads the server's settings and the catalog; only the batch waits for it.
 *
 * A role that may read the WAL files reads them; one with REPLICATION alone has a replication connection
 * stream it (wal/replication.ts), opened beside the first session; the work's first look at the
 * server waits for it, so that every window starts after the stream does. Its temporary slot keeps
 * the WAL until it is read. Otherwise the reading session reads the files, and keeps the WAL the
 * measurements read back with a temporary replication slot where it may make one: on a busy server
 * a checkpoint forced by WAL volume could remove a segment between the batch and the read. The slot
 * holds WAL from the last checkpoint on, and the server drops it with the session that made it,
 * even after a crash (a session that goes back to a caller's Pool drops it first). Should making it
 * fail (the last free slot taken meanwhile), the page addresses the reader checks still catch a
 * recycled segment. A role that reads no WAL makes no slot.
 */
async function withWalReading<T>(
  session: Session,
  flushTimeoutMs: number,
  readFrom: number | undefined,
  work: (session: Session) => Promise<T>,
  onCompanionClosing: (closing: Promise<void>) => void,
): Promise<T> {
  // A sibling that cannot be had (no connection free, the server full, the role's limit) leaves the
  // reading to this session; one whose opening statement was cancelled fails the call, as any
  // statement of the call would (a cancel swallowed here left a comparison's steps run on).
  const sibling =
    session.openSibling?.().catch((error: unknown) => {
      if (sqlStateOf(error) === QUERY_CANCELED) throw error
      return null
    }) ?? Promise.resolve(null)
  sibling.catch(() => undefined)
  // A copy of the session, so that the companion is the measurements' alone (the server's settings
  // are cached per session object).
  const measuring: Session = { ...session }
  const capabilities = await readCapabilities(measuring).catch(async (error: unknown) => {
    await closeSibling(sibling)
    throw error
  })
  // A role that may read the files reads them, as every release before the stream did; the stream
  // serves a role with REPLICATION alone. (Streamed for superusers too, a 218 MB window of the
  // field notes' experiment stalled part way: until that is understood, the files come first.) A
  // stream that cannot be had (a pooler that refuses replication connections, say) leaves the other
  // routes, and why is kept for the advice.
  const opening =
    capabilities.replication && !capabilities.readWal && session.openReplication
      ? WalStream.open(session, flushTimeoutMs, readFrom).catch((error: unknown) => ({ refused: describeError(error) }))
      : Promise.resolve(null)
  attachWalStream(measuring, opening)
  const stream = opening.then((opened) => (opened instanceof WalStream ? opened : null))
  const reserve = async (on: Session) => (capabilities.reserveWal && capabilities.readWal ? createSlot(on) : null)
  // A session with no sibling to open (a caller's Client) makes its slot before the work begins:
  // made later, it would run inside the measuring transaction, and a refusal there would abort it.
  const alone = session.openSibling === undefined
  const ownSlot: Promise<string | null> = alone ? reserve(session) : Promise.resolve(null)
  await ownSlot.catch(async (error: unknown) => {
    await closeSibling(sibling)
    throw error
  })
  let readerSlot: Promise<string | null> = Promise.resolve(null)
  const companion = sibling.then(async (reader) => {
    if (await stream) {
      if (reader) attachWalStream(reader, stream)
      return reader
    }
    // Opened for nothing where the role cannot read the WAL: closed, and the first session reads.
    if (!capabilities.readWal) return closeSibling(Promise.resolve(reader))
    // The reader's slot is made as the batch starts, ahead of the reader's first read on the same
    // connection. It reserves from the last checkpoint's redo, which lies before the window's
    // start unless a checkpoint began in those few milliseconds. Where no reader could be had (a
    // Pool with no connection free), the measuring session reads without a slot of its own: made
    // now, it would run inside the measuring transaction. The page addresses the reader checks
    // still catch a recycled segment.
    if (reader) {
      readerSlot = reserve(reader)
      readerSlot.catch(() => undefined)
    }
    return reader
  })
  // Awaited by the work where it reads the WAL, and after it in any case.
  companion.catch(() => undefined)
  measuring.companion = companion
  const stopReading = async (): Promise<unknown> => {
    const reader = await companion.catch(() => null)
    if (reader) {
      onCompanionClosing(
        readerSlot.then(
          (slot) => closeReader(reader, slot),
          () => reader.close(true),
        ),
      )
    }
    await (await stream)?.close()
    const slot = await ownSlot.catch(() => null)
    return slot ? dropSlot(session, slot) : null
  }
  let result: T
  try {
    result = await work(measuring)
    // A slot refused for a reason of its own (slots full) was left out above; anything else (a
    // cancel) fails the call as any other statement of it would.
    await readerSlot
    await companion
  } catch (error) {
    await stopReading()
    throw error
  }
  const failure = await stopReading()
  if (failure !== null)
    throw fromServerError(failure, 'dropping the temporary replication slot that kept the measured WAL')
  return result
}

/**
 * A pooled reader goes back to its pool, warm for the next call, once its slot is dropped; any
 * other reader's backend ends, and the temporary slot with it.
 */
async function closeReader(reader: Session, slot: string | null): Promise<void> {
  const failure = slot === null || !reader.pooled ? null : await dropSlot(reader, slot)
  await reader.close(failure !== null)
  if (failure !== null) throw failure
}

async function closeSibling(sibling: Promise<Session | null>): Promise<null> {
  await (await sibling.catch(() => null))?.close().catch(() => undefined)
  return null
}

/**
 * Drops a slot `session` made (a clean-up: a slot left on a caller's connection would hold WAL for
 * as long as the connection lives). The first failure, or null.
 */
async function dropSlot(session: Session, slot: string): Promise<unknown> {
  const { failure } = await cleanUp(
    () => session.query('select pg_drop_replication_slot($1)', [slot]),
    // The server drops a session's temporary slots at any error it raises, an expected one too.
    (error) => sqlStateOf(error) === UNDEFINED_OBJECT,
  )
  return failure
}

/**
 * Moves the reading session's slot (if it made one) up to `lsn`: WAL before it has been read, so
 * a checkpoint may recycle it. A watch that runs for hours would otherwise hold every segment
 * since it began. Only the session that made a temporary slot may move it.
 */
export async function advanceReadingSlot(reader: Session, lsn: string): Promise<void> {
  const stream = await walStreamOf(reader)
  if (stream) return stream.release(parseLsn(lsn))
  try {
    await reader.query(
      `select pg_replication_slot_advance(slot_name, $1::pg_lsn) from pg_replication_slots
        where slot_name = 'walcost_' || pg_backend_pid() and temporary`,
      [lsn],
    )
  } catch (error) {
    throw fromServerError(error, 'moving the replication slot that keeps the WAL still to be read')
  }
}

/**
 * A temporary slot that keeps the WAL from the last checkpoint on; null where the server refuses
 * one for a reason of its own, and the WAL is then read without it. Any other failure (a cancel, a
 * lost connection) goes on.
 */
async function createSlot(session: Session): Promise<string | null> {
  try {
    const [slot] = await session.query<{ name: string }>(
      `select (pg_create_physical_replication_slot('walcost_' || pg_backend_pid(), true, true)).slot_name::text as name`,
    )
    return slot?.name ?? null
  } catch (error) {
    if (SLOT_REFUSALS.has(sqlStateOf(error) ?? '')) return null
    throw error
  }
}

/**
 * Why a server refuses a slot: every slot in use (53400), max_replication_slots = 0 or wal_level
 * minimal (55000), no REPLICATION (42501), a slot of this backend's name left by a caller (42710).
 */
const SLOT_REFUSALS = new Set(['53400', '55000', '42501', '42710'])

/** SQLSTATE of a slot that is not there (any more). */
const UNDEFINED_OBJECT = '42704'

/** SQLSTATE of a statement cancelled (pg_cancel_backend, a cancel request, statement_timeout). */
const QUERY_CANCELED = '57014'

/** Runs `setup` and commits it: it is not part of any measurement. */
export async function runSetup(session: Session, setup: string | undefined): Promise<void> {
  if (setup === undefined) return
  try {
    await session.exec(setup)
  } catch (error) {
    throw fromServerError(error, 'running setup', 'SETUP_FAILED')
  }
}
