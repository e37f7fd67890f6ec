import { withSession } from '../driver/open.js'
import type { Session } from '../driver/types.js'
import { fromServerError } from '../errors.js'
import { type ParsedConnectionOptions, sessionLimits } from '../options.js'
import { readServer } from '../wal/server.js'

/**
 * What every entry point does around its work: a session on `db` (cancelled when `signal` fires,
 * always closed), `setup` run first and, for work that reads WAL back, that WAL reserved.
 */
export function onDatabase<T>(
  options: ParsedConnectionOptions & { setup?: string | undefined },
  work: (session: Session) => Promise<T>,
  { readsWal = true }: { readsWal?: boolean } = {},
): Promise<T> {
  return withSession(options.db, sessionLimits(options), options.signal, async (session) => {
    await runSetup(session, options.setup)
    return readsWal ? withReservedWal(session, () => work(session)) : work(session)
  })
}

/**
 * Keeps the WAL that the measurements will read back: on a busy server a checkpoint forced by WAL
 * volume could remove a segment between the batch and the read. A temporary physical replication
 * slot holds WAL from the last checkpoint on; the server drops it with the session, even after a
 * crash. Without the REPLICATION privilege the measurements run without it.
 */
async function withReservedWal<T>(session: Session, work: () => Promise<T>): Promise<T> {
  if (session.backend !== 'pg' || !(await readServer(session)).capabilities.reserveWal) return work()
  const [slot] = await session.query<{ name: string }>(
    `select (pg_create_physical_replication_slot('walcost_' || pg_backend_pid(), true, true)).slot_name::text as name`,
  )
  try {
    return await work()
  } finally {
    if (slot) await session.query('select pg_drop_replication_slot($1)', [slot.name]).catch(() => undefined)
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
