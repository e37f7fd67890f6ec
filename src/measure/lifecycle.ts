import { withSession } from '../driver/open.js'
import type { Session } from '../driver/types.js'
import { fromServerError } from '../errors.js'
import { type ParsedConnectionOptions, sessionLimits } from '../options.js'
import { readServer, type Server } from '../wal/server.js'

/**
 * What every entry point does around its work: a session on `db` (cancelled when `signal` fires,
 * always closed), `setup` run first and, for work that reads WAL back, that WAL reserved.
 */
export async function onDatabase<T>(
  options: ParsedConnectionOptions & { setup?: string | undefined },
  work: (session: Session) => Promise<T>,
  { readsWal = true }: { readsWal?: boolean } = {},
): Promise<T> {
  // The reading session closes alongside the first one, not before it: each waits for its backend to exit.
  let readerClosed: Promise<void> = Promise.resolve()
  try {
    return await withSession(options.db, sessionLimits(options), options.signal, async (session) => {
      await runSetup(session, options.setup)
      if (!readsWal || session.backend !== 'pg') return work(session)
      return withWalReading(session, work, (closing) => {
        readerClosed = closing
      })
    })
  } finally {
    await readerClosed
  }
}

/**
 * On a real server, a second session reads each batch's WAL while the batch runs (wal/follow.ts),
 * where one can be opened at once and the role may read WAL files; it connects while the first
 * reads the server's settings. Whichever session is the reading one keeps the WAL the measurements
 * read back with a temporary replication slot: on a busy server a checkpoint forced by WAL volume
 * could remove a segment between the batch and the read. The slot holds WAL from the last
 * checkpoint on, and the server drops it with the session that made it, even after a crash.
 * Without the REPLICATION privilege the measurements run without it.
 */
async function withWalReading<T>(
  session: Session,
  work: (session: Session) => Promise<T>,
  onCompanionClosing: (closing: Promise<void>) => void,
): Promise<T> {
  const sibling = session.openSibling?.().catch(() => null) ?? Promise.resolve(null)
  // A copy of the session, so that the companion is the measurements' alone (readServer remembers it).
  const measuring: Session = { ...session }
  const server = await readServer(measuring).catch(async (error: unknown) => {
    await closeSibling(sibling)
    throw error
  })
  const companion = server.capabilities.readWal ? await sibling : await closeSibling(sibling)
  if (!companion) return withReservedWal(session, server, () => work(measuring))
  // Created while the first session reads the catalog; the batch waits for it. Should it fail (the
  // last free slot taken meanwhile), the page addresses the reader checks still catch a recycled segment.
  const slot = server.capabilities.reserveWal ? createSlot(companion).catch(() => null) : Promise.resolve(null)
  measuring.companion = slot.then(() => companion)
  try {
    return await work(measuring)
  } finally {
    // Closed, not returned to a pool: its backend ends, and with it the temporary slot.
    onCompanionClosing(slot.then(() => companion.close(true)).catch(() => undefined))
  }
}

async function closeSibling(sibling: Promise<Session | null>): Promise<null> {
  await (await sibling)?.close(true).catch(() => undefined)
  return null
}

async function createSlot(session: Session): Promise<string | null> {
  const [slot] = await session.query<{ name: string }>(
    `select (pg_create_physical_replication_slot('walcost_' || pg_backend_pid(), true, true)).slot_name::text as name`,
  )
  return slot?.name ?? null
}

/** The slot on the measuring session itself, dropped when its work is done. */
async function withReservedWal<T>(session: Session, server: Server, work: () => Promise<T>): Promise<T> {
  if (!server.capabilities.reserveWal) return work()
  const slot = await createSlot(session)
  try {
    return await work()
  } finally {
    if (slot) await session.query('select pg_drop_replication_slot($1)', [slot]).catch(() => undefined)
  }
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
