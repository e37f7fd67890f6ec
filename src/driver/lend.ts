import { WalcostError } from '../core/errors.js'
import type { Statements } from './first-failure.js'

/**
 * The caller's own code runs on walcost's connection, inside the measuring transaction, through a
 * stand-in for that connection: the same object to the code (a pg Client or PoolClient, a PGlite
 * instance: every member, `instanceof` included), with three differences that keep the
 * transaction walcost's.
 * - Transaction control becomes savepoints: the code's BEGIN (Drizzle's and Kysely's
 *   `transaction()`, PGlite's) opens a savepoint, its COMMIT releases it and its ROLLBACK rolls
 *   back to it, so a repository function that runs in a transaction of its own is measured as it
 *   is. A COMMIT or ROLLBACK with no BEGIN of its own would end walcost's transaction: it is refused
 *   before it is sent, and the measurement fails with BATCH_ENDED_TRANSACTION.
 * - Members that would end the connection (end(), close(), connect()) are refused, and release()
 *   does nothing: the connection is walcost's until the measurement ends, and walcost releases it.
 *   A release() that does nothing lets a pool-shaped adapter hand it out (Kysely's PostgresDialect
 *   with `pool: { connect: async () => db, end: async () => {} }`).
 * - Before each of the code's transactions ends, `beforeSavepointEnds` runs on the connection: a
 *   savepoint's xid is held only until it ends, and the measurement needs it to know the records
 *   written under it as the batch's.
 * - Once the code has settled, every call is refused: a query the code did not await cannot run
 *   after walcost's rollback, and commit, on a connection that goes back to the caller.
 * - Calls whose promise has not settled are counted: where the code settles with some still
 *   running or queued, it did not await them, and the measurement fails with BATCH_NOT_AWAITED.
 */
export interface Lent<Handle> {
  handle: Handle
  /** Called once the code has settled: from then on the handle refuses every call. */
  revoke(): void
  /** The transaction control the handle refused, if any: the measurement fails with it. */
  readonly refusal: WalcostError | undefined
  /** The code's calls still running or queued on the connection (their promises not settled). */
  readonly running: number
}

export interface LendShape {
  /** The methods that take SQL text (or a pg query config) first: transaction control is read from it. */
  query: string[]
  /** Members that would end or give away the connection. */
  refused: string[]
  /** Members replaced by the handle's own (PGlite's transaction(), run on savepoints). */
  own?: Record<string, (handle: unknown, savepoints: Savepoints) => unknown>
}

/** The code's transactions, as savepoints of walcost's transaction, run on the connection itself. */
export interface Savepoints {
  /** Opens the code's next transaction. */
  begin(): Promise<unknown>
  /** Ends the code's innermost transaction. */
  end(outcome: 'commit' | 'rollback'): Promise<unknown>
}

/** A member the code may call and that does nothing: the connection is released by walcost. */
const keptByWalcostMember = () => undefined
export const keptByWalcost = () => keptByWalcostMember

/** Runs on the connection, inside the code's transaction, just before it ends. */
export type BeforeSavepointEnds = () => Promise<void>

const BEGIN = /^\s*(begin|start\s+transaction)\b[^;]*;?\s*$/i
const END = /^\s*(commit|end|rollback|abort)(\s+(transaction|work))?\s*;?\s*$/i

/** Reads the statement a query call sends: pg's query(text | { text }, ...) and PGlite's query(text, ...). */
function statementOf(first: unknown): string | undefined {
  if (typeof first === 'string') return first
  if (typeof first === 'object' && first !== null && typeof (first as { text?: unknown }).text === 'string') {
    return (first as { text: string }).text
  }
  return undefined
}

function refusedAfter(what: string): WalcostError {
  return new WalcostError(
    'BATCH_FAILED',
    `${what} was called on the run callback's database after the callback had settled: walcost's transaction is being rolled back, and nothing may run on it now. Await every query inside run.`,
  )
}

/** The outcome for a promise-style call, or through a pg-style callback. */
function settle(outcome: Promise<unknown>, args: unknown[]): unknown {
  const callback = args.at(-1)
  if (typeof callback !== 'function') return outcome
  outcome.then(
    (result) => (callback as (error: null, result: unknown) => void)(null, result),
    (error: Error) => (callback as (error: Error) => void)(error),
  )
  return undefined
}

/** Wraps `target` as the handle described above. */
export function lend<Handle extends object>(
  target: Handle,
  shape: LendShape,
  beforeSavepointEnds: BeforeSavepointEnds,
  statements: Statements,
): Lent<Handle> {
  let revoked = false
  let refusal: WalcostError | undefined
  let depth = 0
  let running = 0
  /** A call's promise, counted while it runs. */
  const counted = (outcome: Promise<unknown>): Promise<unknown> => {
    running++
    return outcome.finally(() => {
      running--
    })
  }
  const query = (target as Record<string, unknown>)[shape.query[0] ?? 'query'] as (sql: string) => Promise<unknown>
  const send = (sql: string) => query.call(target, sql)
  const savepoints: Savepoints = {
    begin: () => send(`savepoint walcost_app_${++depth}`),
    // One statement, so that it runs over the extended protocol too; a savepoint rolled back to
    // stays open until walcost's rollback, and the next one of the same name hides it.
    async end(outcome) {
      await beforeSavepointEnds()
      return send(`${outcome === 'commit' ? 'release savepoint' : 'rollback to savepoint'} walcost_app_${depth--}`)
    },
  }
  /** The code's transaction control, run as savepoints; undefined for any other statement. */
  const asSavepoint = (statement: string): Promise<unknown> | undefined => {
    if (BEGIN.test(statement)) return savepoints.begin()
    const end = END.exec(statement)?.[1]?.toLowerCase()
    if (end === undefined) return undefined
    if (depth === 0) {
      refusal ??= new WalcostError(
        'BATCH_ENDED_TRANSACTION',
        `the run callback sent ${statement.trim()} without a BEGIN of its own: it would have ended walcost's measuring transaction and committed what the callback wrote before it. walcost refused it, so nothing was committed. Remove the transaction control, or open a transaction of the callback's own (BEGIN ... COMMIT, or its library's transaction()), which walcost runs as a savepoint.`,
        { field: 'run' },
      )
      return Promise.reject(refusal)
    }
    return savepoints.end(end === 'commit' || end === 'end' ? 'commit' : 'rollback')
  }
  const wrap =
    (name: string, member: (...args: unknown[]) => unknown) =>
    (...args: unknown[]): unknown => {
      if (revoked) {
        // A pool adapter's late release() is harmless; a late query fails as its caller awaits it; any
        // other call throws where it is made, never as a rejection nobody holds.
        if (member === keptByWalcostMember) return undefined
        if (shape.query.includes(name) || shape.own?.[name])
          return settle(Promise.reject(refusedAfter(`${name}()`)), args)
        throw refusedAfter(`${name}()`)
      }
      if (shape.refused.includes(name)) {
        throw new WalcostError(
          'INVALID_OPTIONS',
          `${name}() was called on the run callback's database: the connection is walcost's for the measurement, and walcost releases it afterwards. Leave it to walcost.`,
          { field: 'run' },
        )
      }
      const statement = shape.query.includes(name) ? statementOf(args[0]) : undefined
      const control = statement === undefined ? undefined : asSavepoint(statement)
      if (control) return settle(counted(control), args)
      const sent = member.apply(target, args)
      if (!(sent instanceof Promise)) return sent
      if (statement === undefined) return counted(sent)
      // The code's statements are the connection's: one refused in a transaction the code's own
      // earlier failure aborted (a failure it caught and went on from) is said with that failure.
      return counted(
        sent.then(
          (result: unknown) => {
            statements.succeeded()
            return result
          },
          (error: unknown) => {
            throw statements.failed(error)
          },
        ),
      )
    }
  const handle: Handle = new Proxy(target, {
    get(object, name) {
      if (typeof name !== 'string') return Reflect.get(object, name, object)
      const own = shape.own?.[name]
      if (own) return wrap(name, own(handle, savepoints) as (...args: unknown[]) => unknown)
      const value = Reflect.get(object, name, object)
      return typeof value === 'function' ? wrap(name, value as (...args: unknown[]) => unknown) : value
    },
  })
  return {
    handle,
    revoke() {
      revoked = true
    },
    get refusal() {
      return refusal
    },
    get running() {
      return running
    },
  }
}
