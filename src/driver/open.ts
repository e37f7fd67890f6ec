import type { Database, PGliteDatabase, SessionLimits } from '../core/database.js'
import { abortedError, fromServerError, WalcostError } from '../core/errors.js'
import type { Session } from './types.js'

/** A PGlite instance, told by its shape: a pg Client or Pool is told apart without loading PGlite. */
function isPglite(db: unknown): db is PGliteDatabase {
  return typeof db === 'object' && db !== null && 'exec' in db && 'waitReady' in db && 'query' in db
}

/**
 * Opens a session on whatever `db` is; with none, on a fresh embedded PGlite. Each driver (pg with
 * pg-copy-streams, PGlite) is loaded on the first session that needs it: a command that reads
 * files, or only prints its help, loads neither.
 */
export async function openSession(db: Database | undefined, limits: SessionLimits): Promise<Session> {
  try {
    if (db === undefined) return await (await import('./pglite.js')).openEmbeddedSession()
    if (typeof db === 'string') return await (await import('./pg.js')).openUrlSession(db, limits)
    if (isPglite(db)) return (await import('./pglite.js')).pgliteSession(db)
    const { clientSession, isPgClient, isPgPool, openPoolSession } = await import('./pg.js')
    if (isPgPool(db)) return await openPoolSession(db, limits)
    if (isPgClient(db)) return await clientSession(db, limits)
  } catch (error) {
    throw fromServerError(error, 'connecting to the database', 'CONNECTION_FAILED')
  }
  throw new WalcostError(
    'INVALID_OPTIONS',
    'db: expected a connection string, a pg Client or Pool, or a PGlite instance.',
    { field: 'db' },
  )
}

/**
 * Runs `work` on a session for `db` and always closes it. When `signal` fires, the statement
 * running on a real server is cancelled, so that its transaction rolls back at once. A failure is
 * said to have happened while `step` (measuring, following the WAL, ...).
 */
export async function withSession<T>(
  db: Database | undefined,
  limits: SessionLimits,
  signal: AbortSignal | undefined,
  step: string,
  work: (session: Session) => Promise<T>,
): Promise<T> {
  const session = await openSession(db, limits)
  const cancel = () => session.cancel?.()
  signal?.addEventListener('abort', cancel, { once: true })
  let result: T
  try {
    result = await work(session)
  } catch (error) {
    const failure = signal?.aborted ? abortedError(error) : fromServerError(error, step)
    const broken =
      failure.code === 'CONNECTION_FAILED' || failure.code === 'ABORTED' || !(error instanceof WalcostError)
    signal?.removeEventListener('abort', cancel)
    await session.close(broken).catch(() => undefined)
    throw failure
  }
  signal?.removeEventListener('abort', cancel)
  // A caller's connection gets its settings back as the session closes: a cancel that strikes
  // that fails the call as it would any of its statements.
  await session.close().catch((error: unknown) => {
    throw fromServerError(error, "restoring the connection's settings")
  })
  return result
}
