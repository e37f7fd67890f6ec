import { fromServerError } from '../core/errors.js'
import { cleanUp } from './clean-up.js'
import type { Session } from './types.js'

/** A transaction of walcost's own, or a savepoint inside one the caller of this helper holds open. */
export type Enclosing = 'transaction' | 'savepoint'

/**
 * Runs `work` in a transaction (or savepoint) that is always rolled back, so nothing it did
 * persists. Should the connection die instead, the server rolls back by itself. `settings` are set
 * for the transaction only (set_config's is_local), so the rollback takes them away too.
 *
 * A batch that ends the transaction itself (a COMMIT inside `sql`) would leave the session in
 * autocommit, where each of its later writes commits at once. For as long as the transaction is
 * open, the session's default_transaction_read_only is on and the transaction itself is READ WRITE:
 * a transaction opened behind walcost's back is read-only, and those writes fail instead.
 */
export async function rolledBack<T>(
  session: Session,
  enclosing: Enclosing,
  work: () => Promise<T>,
  settings: Record<string, string> = {},
): Promise<T> {
  let readOnlyBefore = 'off'
  if (enclosing === 'transaction') {
    const [row] = await session.query<{ previous: string }>(
      `select current_setting('default_transaction_read_only') as previous, set_config('default_transaction_read_only', 'on', false)`,
    )
    readOnlyBefore = row?.previous === 'on' ? 'on' : 'off'
  }
  let result: T
  try {
    // A session that was read-only by default stays so: its transaction is too.
    await session.exec(
      enclosing === 'savepoint' ? `savepoint ${SAVEPOINT}` : readOnlyBefore === 'on' ? 'begin' : 'begin read write',
    )
    for (const [name, value] of Object.entries(settings)) {
      try {
        await session.query('select set_config($1, $2, true)', [name, value])
      } catch (error) {
        throw fromServerError(error, `setting ${name} = ${value} for the measurement`)
      }
    }
    result = await work()
  } catch (error) {
    // The work's own failure came first and is the one to report.
    await undo(session, enclosing, readOnlyBefore)
    throw error
  }
  // After work that succeeded, a rollback that was cancelled (and then done again) still fails the
  // call, as any statement of it would.
  const failure = await undo(session, enclosing, readOnlyBefore)
  if (failure !== null) throw fromServerError(failure, "rolling back walcost's transaction")
  return result
}

const SAVEPOINT = 'walcost_rollback'

/**
 * Rolls back and restores the session (as a clean-up: the connection must not go back to its
 * caller inside walcost's transaction, aborted, or read-only). Each statement is sent alone, so
 * that one that fails is known. The first failure, or null.
 */
async function undo(session: Session, enclosing: Enclosing, readOnlyBefore: string): Promise<unknown> {
  const statements =
    enclosing === 'transaction'
      ? ['rollback', `set default_transaction_read_only = ${readOnlyBefore}`]
      : // A failed release leaves the enclosing transaction aborted: the next try rolls back to the savepoint again.
        [`rollback to savepoint ${SAVEPOINT}`, `release savepoint ${SAVEPOINT}`]
  const { failure } = await cleanUp(async () => {
    for (const statement of statements) await session.exec(statement)
  })
  return failure
}
