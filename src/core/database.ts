// What a caller passes as a database, and the bounds walcost runs under: types every layer names.
// pg's are imported as types only; at run time nothing outside src/driver/ loads pg or PGlite.
import type { Client, Pool, PoolClient } from 'pg'

/** What `db` may be: a connection string, a pg Client or Pool, or a PGlite instance. */
export type Database = string | Client | Pool | PGliteDatabase

/**
 * A PGlite instance (`new PGlite()`, `await PGlite.create()`), by the members walcost uses. Declared
 * here rather than imported, so that a consumer's type check does not need PGlite's Emscripten types.
 */
export interface PGliteDatabase {
  query<Row>(sql: string, params?: unknown[], options?: { blob?: Blob }): Promise<{ rows: Row[] }>
  exec(sql: string): Promise<unknown>
  waitReady: Promise<void>
  readonly closed: boolean
  close(): Promise<void>
}

/**
 * What a `run` batch is called with: walcost's own connection, as the app's code uses it (a pg
 * Client or PoolClient, or a PGlite instance), inside the measuring transaction.
 */
export type BatchDatabase = Client | PoolClient | PGliteDatabase

/**
 * The bounds every session runs under, so that walcost never waits without end inside a caller's
 * process: on the connection, on any lock, and (when asked) on any statement.
 */
export interface SessionLimits {
  /** Bound on opening a connection (or checking one out of a Pool). */
  connectTimeoutMs: number
  /** lock_timeout for every statement walcost runs on the session. */
  lockTimeoutMs: number
  /** statement_timeout for every statement walcost runs, the batch included; undefined leaves the server's. */
  statementTimeoutMs: number | undefined
}
