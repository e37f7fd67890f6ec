import { fromServerError } from '../errors.js'
import type { Session } from './types.js'

/** A transaction of walcost's own, or a savepoint inside one the caller of this helper holds open. */
export type Enclosing = 'transaction' | 'savepoint'

/**
 * Runs `work` in a transaction (or savepoint) that is always rolled back, so nothing it did
 * persists. Should the connection die instead, the server rolls back by itself. `settings` are set
 * for the transaction only (set_config's is_local), so the rollback takes them away too.
 */
export async function rolledBack<T>(
  session: Session,
  enclosing: Enclosing,
  work: () => Promise<T>,
  settings: Record<string, string> = {},
): Promise<T> {
  const savepoint = 'walcost_rollback'
  await session.exec(enclosing === 'transaction' ? 'begin' : `savepoint ${savepoint}`)
  try {
    for (const [name, value] of Object.entries(settings)) {
      try {
        await session.query('select set_config($1, $2, true)', [name, value])
      } catch (error) {
        throw fromServerError(error, `setting ${name} = ${value} for the measurement`)
      }
    }
    return await work()
  } finally {
    await session
      .exec(
        enclosing === 'transaction' ? 'rollback' : `rollback to savepoint ${savepoint}; release savepoint ${savepoint}`,
      )
      .catch(() => undefined)
  }
}
