// Every default walcost uses, in one place. The zod schemas in options.ts read them from here.

/** How inserted rows are sent when the batch is `rows` or `count`. */
export const DEFAULT_METHOD = 'insert'
/** Rows per INSERT statement for method 'multirow'. */
export const DEFAULT_BATCH_SIZE = 1000
/** How long any statement walcost runs may wait for a lock (DROP INDEX takes an exclusive one). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000
/** How long opening a connection may take, where neither the URL nor PGCONNECT_TIMEOUT says. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
/** How long to wait for the server to flush WAL past the measured window before reading it. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 10_000
/** Seed of the synthetic rows of `count`, so the same call inserts the same rows. */
export const DEFAULT_SEED = 1

/** The largest `count`: beyond this, stream `rows` or write the batch as `sql`. */
export const MAX_COUNT = 50_000_000
/** PostgreSQL's limit on bind parameters in one statement, which bounds a multi-row INSERT. */
export const MAX_BIND_PARAMETERS = 65_535
/** Size of each text chunk a COPY stream is fed with. */
export const COPY_CHUNK_BYTES = 64 * 1024
/** PGlite takes COPY input as one Blob per statement: at most this much is held at once. */
export const COPY_BLOB_BYTES = 16 * 1024 * 1024

/** Real rows copied into the audit's scratch table, so its indexes have a realistic depth. */
export const DEFAULT_SAMPLE_ROWS = 100_000
/** Synthetic rows the audit inserts into the scratch table when no batch is given. */
export const DEFAULT_AUDIT_COUNT = 10_000
/** How long index usage counters must have accumulated before an unscanned index may be dropped. */
export const DEFAULT_MIN_STATS_AGE_DAYS = 7
/** Real single-row commits the remedies make on a temporary table to measure what a commit adds. */
export const COMMITS_MEASURED = 200
