// What a caller passes as a database, and the bounds walcost runs under: types every layer names.
// pg's and PGlite's are imported as types only; at run time nothing outside src/driver/ loads pg or PGlite.
import type { PGlite } from '@electric-sql/pglite'
import type { Client, Pool, PoolClient } from 'pg'

/** What `db` may be: a connection string, a pg Client, Pool or PoolClient, or a PGlite instance. */
export type Database = string | Client | Pool | PoolClient | PGliteDatabase

/**
 * A PGlite instance (`new PGlite()`, `await PGlite.create()`), by the members walcost uses: any
 * object that has them is accepted as `db`, and a `run` batch is handed that same object back.
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
 * What a `run` batch is handed for a given `db` (src/driver/lend.ts wraps it, every member kept):
 * - omitted: the embedded PGlite walcost started, a `PGlite` (so `drizzle()` from
 *   `drizzle-orm/pglite` takes it);
 * - a connection string: the pg Client walcost connected, with a `release()` that does nothing, so
 *   a `pg.PoolClient`; a Pool: the PoolClient walcost checked out of it; a PoolClient: itself;
 * - a pg Client: itself;
 * - a PGlite instance: itself.
 * A union (`process.env.DATABASE_URL`, string or undefined) gives the union of what each hands.
 */
export type BatchDatabaseFor<Db> = Db extends undefined
  ? PGlite
  : Db extends string | Pool | PoolClient
    ? PoolClient
    : Db extends Client
      ? Client
      : Db

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
