import { DEFAULT_FLUSH_TIMEOUT_MS } from '../core/defaults.js'
import { describeError, fromServerError } from '../core/errors.js'
import { type ParsedConnectionOptions, sessionLimits } from '../core/options.js'
import { parseLsn } from '../decode/reader.js'
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
  // The reading session closes alongside the first one, not before it: each waits for its backend to exit.
  let readerClosed: Promise<void> = Promise.resolve()
  try {
    return await withSession(options.db, sessionLimits(options), options.signal, step, async (session) => {
      await runSetup(session, options.setup)
      if (!readsWal || session.backend !== 'pg') return work(session)
      return withWalReading(session, options.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS, readFrom, work, (closing) => {
        readerClosed = closing
      })
    })
  } finally {
    await readerClosed
  }
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
  const sibling = session.openSibling?.().catch(() => null) ?? Promise.resolve(null)
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
  const reserve = async (on: Session) =>
    capabilities.reserveWal && capabilities.readWal ? createSlot(on).catch(() => null) : null
  let ownSlot: Promise<string | null> = Promise.resolve(null)
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
    // start unless a checkpoint began in those few milliseconds.
    if (reader) readerSlot = reserve(reader)
    else {
      ownSlot = reserve(session)
      await ownSlot
    }
    return reader
  })
  measuring.companion = companion
  try {
    return await work(measuring)
  } finally {
    const reader = await companion
    if (reader) onCompanionClosing(readerSlot.then((slot) => closeReader(reader, slot)).catch(() => undefined))
    await (await stream)?.close()
    const slot = await ownSlot
    if (slot) await dropSlot(session, slot)
  }
}

/**
 * A pooled reader goes back to its pool, warm for the next call, once its slot is dropped; any
 * other reader's backend ends, and the temporary slot with it.
 */
async function closeReader(reader: Session, slot: string | null): Promise<void> {
  const dropped = slot === null || !reader.pooled || (await dropSlot(reader, slot))
  await reader.close(!dropped)
}

async function closeSibling(sibling: Promise<Session | null>): Promise<null> {
  await (await sibling)?.close().catch(() => undefined)
  return null
}

/** Drops a slot `session` made; false where that failed. */
async function dropSlot(session: Session, slot: string): Promise<boolean> {
  return session.query('select pg_drop_replication_slot($1)', [slot]).then(
    () => true,
    () => false,
  )
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

async function createSlot(session: Session): Promise<string | null> {
  const [slot] = await session.query<{ name: string }>(
    `select (pg_create_physical_replication_slot('walcost_' || pg_backend_pid(), true, true)).slot_name::text as name`,
  )
  return slot?.name ?? null
}

/** Runs `setup` and commits it: it is not part of any measurement. */
export async function runSetup(session: Session, setup: string | undefined): Promise<void> {
  if (setup === undefined) return
  try {
    await session.exec(setup)
  } catch (error) {
    throw fromServerError(error, 'running setup', 'SETUP_FAILED')
  }
}
