import { sqlStateOf } from '../core/errors.js'

/** SQLSTATE of a statement refused because an earlier one aborted the transaction. */
const IN_FAILED_TRANSACTION = '25P02'

/** A connection's statements, run so that their failures are said as keepingFirstFailure says. */
export interface Statements {
  run<T>(statement: () => Promise<T>): Promise<T>
  /** A statement's failure seen elsewhere (a COPY's stream): what to throw for it. */
  failed(error: unknown): unknown
  /** A statement seen to succeed elsewhere. */
  succeeded(): void
}

/**
 * Runs a connection's statements so that one refused in an aborted transaction (25P02) fails with
 * the failure that aborted it, as the root of its cause chain: "current transaction is aborted"
 * says only that something failed before, and the code and advice belong to that first failure (a
 * cancel is ABORTED, not QUERY_FAILED). The first failure is kept until a statement succeeds, as
 * only ROLLBACK does in an aborted transaction.
 */
export function keepingFirstFailure(): Statements {
  let first: unknown
  const failed = (error: unknown): unknown => {
    if (sqlStateOf(error) !== IN_FAILED_TRANSACTION || first === undefined) {
      first ??= error
      return error
    }
    return new Error(`${(error as Error).message}, after an earlier statement of the transaction failed`, {
      cause: first,
    })
  }
  const succeeded = () => {
    first = undefined
  }
  return {
    async run(statement) {
      try {
        const result = await statement()
        succeeded()
        return result
      } catch (error) {
        throw failed(error)
      }
    },
    failed,
    succeeded,
  }
}
