import type { Session } from './types.js'

/** A transaction of walcost's own, or a savepoint inside one the caller of this helper holds open. */
export type Enclosing = 'transaction' | 'savepoint'

/**
 * Runs `work` in a transaction (or savepoint) that is always rolled back, so nothing it did
 * persists. Should the connection die instead, the server rolls back by itself.
 */
export async function rolledBack<T>(session: Session, enclosing: Enclosing, work: () => Promise<T>): Promise<T> {
  const savepoint = 'walcost_rollback'
  await session.exec(enclosing === 'transaction' ? 'begin' : `savepoint ${savepoint}`)
  try {
    return await work()
  } finally {
    await session.exec(enclosing === 'transaction' ? 'rollback' : `rollback to savepoint ${savepoint}; release savepoint ${savepoint}`)
      .catch(() => undefined)
  }
}
