/**
 * Every failure walcost reports, by `code`:
 * - `INVALID_OPTIONS`: an option failed validation; `field` names it.
 * - `INVALID_ROWS`: a row in `rows` names a column the table does not have, or is not an object.
 * - `TABLE_NOT_FOUND`: `table` does not name a relation the connection can see.
 * - `UNSUPPORTED_TABLE`: the relation is not a plain table (a view, a partitioned parent, ...), or
 *   the batch cannot be made for it (a foreign key's empty parent, an upsert without a unique key).
 * - `UNSUPPORTED_COLUMN_TYPE`: `count` or `upsert` cannot generate values for a column.
 * - `PERMISSION_DENIED`: the role lacks a privilege walcost needs; the message names the grant.
 * - `UNSUPPORTED_SERVER`: the server is older than PostgreSQL 14 or lacks a function walcost needs.
 * - `LOCK_TIMEOUT`: a lock on the table was not granted within `lockTimeoutMs`.
 * - `CONNECTION_FAILED`: the database could not be reached or the connection broke.
 * - `SETUP_FAILED`: the `setup` SQL failed.
 * - `BATCH_FAILED`: the batch itself failed on the server (constraint, bad value); nothing was kept.
 * - `BATCH_ENDED_TRANSACTION`: the `sql` batch committed or rolled back walcost's transaction.
 * - `BATCH_NOT_AWAITED`: the `run` batch settled while queries it had sent through the connection
 *   it was handed were still running or queued: it did not await them, so some would have run
 *   after the measurement ended.
 * - `BATCH_WROTE_NOTHING`: the batch ran, but walcost's transaction wrote no row of the table: a
 *   query not awaited, a query builder (Drizzle, Kysely) neither awaited nor returned, writes
 *   through a connection the code opened itself, or statements that matched no row.
 * - `BATCH_ESCAPED_TRANSACTION`: walcost's transaction wrote no row of the table, and during the
 *   batch other transactions committed rows to it: the code wrote through a connection of its own,
 *   and what it wrote there was committed, not rolled back (a real server, read from the WAL).
 * - `RUN_FAILED`: the code observeWal ran around (`run`, the command of `walcost observe`) threw or
 *   could not start; nothing was reported, and what it wrote stays (observeWal rolls nothing back).
 * - `WAL_NOT_FLUSHED`: the server did not flush WAL past the measured window in time.
 * - `WAL_UNREADABLE`: the WAL read back did not parse (a recycled segment, a format walcost does not
 *   know, a damaged file); nothing is reported from it rather than a wrong number. From files,
 *   `file` and `lsn` say where.
 * - `ABORTED`: the caller's AbortSignal fired, or a statement was cancelled (statementTimeoutMs, pg_cancel_backend).
 * - `QUERY_FAILED`: any other server error while measuring.
 */
export type WalcostErrorCode =
  | 'INVALID_OPTIONS'
  | 'INVALID_ROWS'
  | 'TABLE_NOT_FOUND'
  | 'UNSUPPORTED_TABLE'
  | 'UNSUPPORTED_COLUMN_TYPE'
  | 'PERMISSION_DENIED'
  | 'UNSUPPORTED_SERVER'
  | 'LOCK_TIMEOUT'
  | 'CONNECTION_FAILED'
  | 'SETUP_FAILED'
  | 'BATCH_FAILED'
  | 'BATCH_ENDED_TRANSACTION'
  | 'BATCH_NOT_AWAITED'
  | 'BATCH_WROTE_NOTHING'
  | 'BATCH_ESCAPED_TRANSACTION'
  | 'RUN_FAILED'
  | 'WAL_NOT_FLUSHED'
  | 'WAL_UNREADABLE'
  | 'ABORTED'
  | 'QUERY_FAILED'

/**
 * The one error class walcost throws. `code` says what went wrong, `field` which option (for
 * INVALID_OPTIONS), `sqlState` the server's SQLSTATE when the server refused something, `file` and
 * `lsn` the WAL file and position that could not be read (WAL_UNREADABLE from files), and `cause`
 * the original error.
 *
 * @example
 * try {
 *   await measureInsertCost({ table: 'missing', count: 10 })
 * } catch (error) {
 *   if (error instanceof WalcostError && error.code === 'TABLE_NOT_FOUND') console.error(error.message)
 * }
 */
export class WalcostError extends Error {
  override readonly name = 'WalcostError'
  readonly code: WalcostErrorCode
  readonly field: string | undefined
  readonly sqlState: string | undefined
  readonly file: string | undefined
  readonly lsn: string | undefined

  constructor(
    code: WalcostErrorCode,
    message: string,
    details: { cause?: unknown; field?: string; sqlState?: string | null; file?: string; lsn?: string } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.code = code
    this.field = details.field
    // null: walcost's own word about a failure (the demo stopped, after its statement was
    // cancelled), not the server's refusal, so it takes no SQLSTATE from its cause.
    this.sqlState = details.sqlState === null ? undefined : (details.sqlState ?? sqlStateOf(details.cause))
    this.file = details.file
    this.lsn = details.lsn
  }
}

/** The SQLSTATE of a server error from either driver, if it or a cause of it (a query builder's wrapper) has one. */
export function sqlStateOf(error: unknown): string | undefined {
  for (const at of causeChain(error)) {
    const code = typeof at === 'object' ? (at as { code?: unknown }).code : undefined
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code
  }
  return undefined
}

const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'])

/** A driver's failure to reach a server or to keep its connection, by SQLSTATE, errno or message. */
export function isConnectionError(error: unknown): boolean {
  const state = sqlStateOf(error)
  if (state !== undefined && /^(08|57P)/.test(state)) return true
  return causeChain(error).some((at) => {
    const errno = typeof at === 'object' ? (at as { code?: unknown }).code : undefined
    return (
      (typeof errno === 'string' && CONNECTION_ERRNOS.has(errno)) ||
      /Connection terminated|connection is closed|not queryable/i.test(ownText(at))
    )
  })
}

/** Past this many characters a quoted message (a failed query's statement) is cut. */
const QUOTED_CHARACTERS = 500
/** How deep a chain of causes is followed. */
const MAX_CAUSES = 8

/**
 * An error's own text: its message, else (an AggregateError from a connection attempt to every
 * address of a host) its first error's, else its code.
 */
function ownText(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  if (error.message) return error.message
  const first = (error as { errors?: unknown[] }).errors?.[0]
  if (first instanceof Error && first.message) return first.message
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : error.name
}

/**
 * A message as walcost quotes it: without the parameters a query builder appends to a failed
 * query (Drizzle's "params: ..."), on one line, and cut at QUOTED_CHARACTERS: a batch of thousands
 * of rows would otherwise print its statement and every value.
 */
function quoted(text: string): string {
  const bare = text
    .replace(/\n\s*params:[\s\S]*$/i, '')
    .replace(/\s+/g, ' ')
    .trim()
  if (bare.length <= QUOTED_CHARACTERS) return bare
  return `${bare.slice(0, QUOTED_CHARACTERS)}... (${bare.length - QUOTED_CHARACTERS} more characters)`
}

/** The chain of causes below `error`, itself included, outermost first. */
export function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let at = error; at !== undefined && at !== null && !chain.includes(at) && chain.length < MAX_CAUSES; ) {
    chain.push(at)
    at = typeof at === 'object' ? (at as { cause?: unknown }).cause : undefined
  }
  return chain
}

/**
 * An error and its causes summarised once, innermost cause first (what went wrong), then what it
 * happened in: "Received an instance of Object (in: Failed query: insert into ...)". Statements are
 * capped and their parameters left out.
 */
export function describeError(error: unknown): string {
  const texts = causeChain(error)
    .map((at) => quoted(ownText(at)))
    .reverse()
  const distinct = texts.filter((text, index) => text !== '' && texts.indexOf(text) === index)
  const [innermost = '', ...outer] = distinct
  return outer.length === 0 ? innermost : `${innermost} (in: ${outer.join('; in: ')})`
}

/**
 * Turns a server or driver error raised during `step` into a WalcostError with the code and advice
 * that fit it. A WalcostError passes through unchanged.
 */
export function fromServerError(
  error: unknown,
  step: string,
  fallback: WalcostErrorCode = 'QUERY_FAILED',
): WalcostError {
  if (error instanceof WalcostError) return error
  const state = sqlStateOf(error)
  const text = describeError(error)
  if (state === '55P03') {
    return new WalcostError(
      'LOCK_TIMEOUT',
      `${step}: a lock on the table was not granted in time (${text}). Another session holds it; retry when it is idle or raise lockTimeoutMs.`,
      { cause: error },
    )
  }
  if (state === '42501') {
    return new WalcostError(
      'PERMISSION_DENIED',
      `${step}: permission denied (${text}). Grant the role the privilege named here, or run as the table's owner.`,
      { cause: error },
    )
  }
  if (state === '57014') {
    const advice = /statement timeout/i.test(text)
      ? "It ran past statement_timeout: raise statementTimeoutMs (or the role's statement_timeout) if the batch needs longer."
      : 'Something cancelled it (pg_cancel_backend, or a cancel request).'
    return new WalcostError('ABORTED', `${step}: the statement was cancelled (${text}); nothing was kept. ${advice}`, {
      cause: error,
    })
  }
  if (isConnectionError(error)) {
    const consequence = step.startsWith('connecting')
      ? 'nothing was measured'
      : 'the server rolls back whatever walcost had open on that connection'
    return new WalcostError(
      'CONNECTION_FAILED',
      `${step}: the connection to the database failed (${text}). Check that the server is up and reachable; ${consequence}.`,
      { cause: error },
    )
  }
  return new WalcostError(fallback, `${step}: ${text}${state ? ` (SQLSTATE ${state})` : ''}`, { cause: error })
}

/** The error for a measurement stopped by the caller's AbortSignal. */
export function abortedError(cause: unknown): WalcostError {
  // Already said by the stopped work, with what it cleaned up. A cancelled statement's ABORTED
  // (SQLSTATE 57014) blames pg_cancel_backend: here the caller's signal did it, and this says so.
  if (cause instanceof WalcostError && cause.code === 'ABORTED' && cause.sqlState === undefined) return cause
  return new WalcostError(
    'ABORTED',
    'the measurement was aborted by its AbortSignal; its transaction was rolled back and nothing was kept.',
    { cause },
  )
}

/** Stops between steps when the caller's AbortSignal has fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortedError(signal.reason)
}
