import type { Duplex } from 'node:stream'
import type { BatchDatabase } from '../core/database.js'
import type { BeforeSavepointEnds, Lent } from './lend.js'

/**
 * One session on one backend. Everything above src/driver/ talks to PostgreSQL through this and
 * nothing else, so the measurement is the same code on PGlite and on a real server.
 */
export interface Session {
  readonly backend: 'pglite' | 'pg'
  /** True when walcost created the database itself (the embedded default). */
  readonly embedded: boolean
  /** One statement with $n parameters; rows come back as objects with text-compatible values. */
  query<Row extends Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>
  /** Several statements without parameters, through the simple query protocol. */
  exec(sql: string): Promise<void>
  /** COPY ... FROM STDIN, fed with text-format chunks; the stream is consumed once. */
  copyIn(copySql: string, chunks: AsyncIterable<string>): Promise<void>
  /**
   * COPY ... TO STDOUT (FORMAT binary) as a stream of byte chunks, for bytea that the text protocol
   * would mangle (WAL segments). PGlite has no such stream: it reads its own files instead.
   */
  copyOut?(copySql: string): AsyncIterable<Uint8Array>
  /**
   * Reads bytes at `offset` of a file in the data directory into `into`, where the backend runs
   * in-process: the part of `into` filled.
   */
  readDataFile?(path: string, offset: number, into: Uint8Array): Uint8Array
  /**
   * A new session on a copy of this database, closed with its own close(): PGlite can clone itself,
   * so comparisons start every run from the very same pages (walcost's own embedded database: as
   * it was when first cloned). Real servers have none.
   */
  clone?(): Promise<Session>
  /**
   * Opens a second session on the same database without waiting for one: null when none can be had
   * at once (a caller's Pool with every connection out). PGlite and a caller's Client have none.
   */
  openSibling?(): Promise<Session | null>
  /**
   * A second session that reads the WAL while this one writes it, when the entry point could open
   * one (see measure/lifecycle.ts); null when it could not.
   */
  companion?: Promise<Session | null>
  /** The connection as the app's own code uses it, for a `run` batch (see lend.ts); revoked once the batch settles. */
  lend(beforeSavepointEnds: BeforeSavepointEnds): Lent<BatchDatabase>
  /**
   * Opens a replication connection (replication=database) as the same role to the same server, as
   * walcost streams physical WAL on; it needs REPLICATION, and pg_hba.conf admits it by the
   * database's line (a `replication` line is for physical-only connections). PGlite has none.
   */
  openReplication?(): Promise<ReplicationConnection>
  /** Cancels the statement running now (a real server's cancel request); PGlite runs one thing at a time and has none. */
  cancel?(): void
  /** Its connection goes back to a caller's Pool on close(), with whatever the session left on it. */
  readonly pooled?: boolean
  /** Ends the session. `broken` tells a pooled connection not to go back to its pool. */
  close(broken?: boolean): Promise<void>
}

/** A walsender's connection: replication commands, then one CopyBoth stream. */
export interface ReplicationConnection {
  /** Its walsender's pid: it names the slot the connection makes. */
  readonly pid: number
  /** A replication command (IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT) in the simple query protocol. */
  command<Row extends Record<string, unknown>>(sql: string): Promise<Row[]>
  /**
   * START_REPLICATION: each CopyData message from the server is one chunk read; each chunk written
   * goes back as one CopyData message; end() sends CopyDone.
   */
  copyBoth(sql: string): Duplex
  /** Ends the connection; the server drops its temporary slot with it. */
  close(): Promise<void>
}
