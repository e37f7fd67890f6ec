// Every default walcost uses, in one place. The zod schemas in options.ts read them from here.

/** How inserted rows are sent when the batch is `rows` or `count`. */
export const DEFAULT_METHOD = 'insert'
/** Rows per INSERT statement for method 'multirow'. */
export const DEFAULT_BATCH_SIZE = 1000
/**
 * The probe that splits a measurement's time into a statement's and a row's (timing.parts): the
 * most rows it sends in one shape (a tenth of them one INSERT a row), and rows an INSERT where it
 * sends several. The probe takes 50-250 ms on a local server.
 */
export const TIMING_PROBE_ROWS = 1_000
export const TIMING_PROBE_ROWS_PER_STATEMENT = 50
/** Whether measureInsertCost runs that probe after a batch of `rows` or `count`. */
export const DEFAULT_TIMING_PROBE = true
/** How long any statement walcost runs may wait for a lock (DROP INDEX takes an exclusive one). */
export const DEFAULT_LOCK_TIMEOUT_MS = 5_000
/** How long opening a connection may take, where neither the URL nor PGCONNECT_TIMEOUT says. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000
/** How long to wait for the server to flush WAL past the measured window before reading it. */
export const DEFAULT_FLUSH_TIMEOUT_MS = 10_000
/**
 * Seed of the values of `count` rows where the caller gives none, so measurements repeat; their
 * unique keys are then fresh on every call.
 */
export const DEFAULT_SEED = 1

/** The largest `count`: beyond this, stream `rows` or write the batch as `sql`. */
export const MAX_COUNT = 50_000_000
/** PostgreSQL's limit on bind parameters in one statement, which bounds a multi-row INSERT. */
export const MAX_BIND_PARAMETERS = 65_535
/** Size of each text chunk a COPY stream is fed with. */
export const COPY_CHUNK_BYTES = 64 * 1024
/**
 * How long a COPY out (the WAL read back) may go without a byte before walcost gives up on the
 * connection: the server sends each 256 kB read in milliseconds, so a silence this long is a
 * connection, or a runtime's sockets, that stopped delivering.
 */
export const COPY_STALL_MS = 30_000
/** How long closing a connection walcost opened may wait for the server's goodbye before the socket is destroyed. */
export const CLOSE_TIMEOUT_MS = 5_000
/** PGlite takes COPY input as one Blob per statement: at most this much is held at once. */
export const COPY_BLOB_BYTES = 16 * 1024 * 1024
/**
 * shared_buffers of the embedded database walcost makes: a copy of it opens in about half the time
 * it takes with PostgreSQL's 128 MB, which a new backend sets up whole as it starts (bench/run.ts,
 * appTest). The WAL a batch writes does not depend on it: evicting a page writes no WAL.
 */
export const EMBEDDED_SHARED_BUFFERS = '16MB'

/** Real rows copied into the audit's scratch table, so its indexes have a realistic depth. */
export const DEFAULT_SAMPLE_ROWS = 100_000
/** Synthetic rows the audit inserts into the scratch table when no batch is given. */
export const DEFAULT_AUDIT_COUNT = 10_000
/** How long index usage counters must have accumulated before an unscanned index may be dropped. */
export const DEFAULT_MIN_STATS_AGE_DAYS = 7
/** Real single-row commits the remedies make on a temporary table to measure what a commit adds. */
export const COMMITS_MEASURED = 200

/** The ceiling's storage when none is named, and its planning figures. */
export const DEFAULT_STORAGE = 'gp3'
export const DEFAULT_ROWS_PER_COMMIT = 1
/** How the planned ingest sends its rows: an INSERT of rowsPerStatement rows (by default a transaction's). */
export const DEFAULT_PLAN_METHOD = 'multirow'
export const DEFAULT_CONNECTIONS = 1
export const DEFAULT_REPLICAS = 0
/** Server time a transaction takes beyond its rows, where no calibration measured it. */
export const DEFAULT_COMMIT_MS = 0
/** A load generator's CPU a row and a transaction on the server's cores: none, as when the application runs elsewhere. */
export const DEFAULT_CLIENT_MS_PER_ROW = 0
export const DEFAULT_CLIENT_MS_PER_COMMIT = 0
/** PostgreSQL's default checkpoint_timeout, in seconds: the ceiling's writeback estimate assumes it. */
export const DEFAULT_CHECKPOINT_TIMEOUT_S = 300
/** How a planned index's new keys arrive, where the description does not say. */
export const DEFAULT_KEY_ORDER = 'random'
/** Rows a planned table holds when the predicted rows are added, where the description does not say. */
export const DEFAULT_PLANNED_ROWS = 1_000_000
/** A planned table's name, where the description gives none. */
export const DEFAULT_PLANNED_TABLE = 'planned'
/** How much a part may grow over its baseline, in percent, before walcost check fails. */
export const DEFAULT_TOLERANCE_PCT = 5
/** suggestBudget's room over what was measured, as a fraction (0.2: 20% more is allowed). */
export const DEFAULT_BUDGET_HEADROOM = 0.2
/** The demo's table and batch: the field notes' published sizes. */
export const DEFAULT_PREFILL_ROWS = 500_000
export const DEFAULT_BATCH_ROWS = 100_000
/** walSummary's rounding of bytes per row, so that snapshots move only when the cost does. */
export const DEFAULT_SUMMARY_ROUND = 10
/** The multi-row INSERT sizes and wal_compression methods the remedies try. */
export const DEFAULT_BATCH_SIZES = [10, 100, 1_000]
export const DEFAULT_COMPRESSION = ['pglz', 'lz4', 'zstd'] as const
/** The ingest rate that sets how many rows fall between checkpoints in the remedies' spacing curve. */
export const DEFAULT_TARGET_ROWS_PER_SEC = 10_000
/** Which rows an update or delete batch takes. */
export const DEFAULT_PICK = 'newest'
/** Share of an upsert's rows whose key exists already, and what the conflict does. */
export const DEFAULT_UPSERT_CONFLICT = 0.5
export const DEFAULT_UPSERT_ACTION = 'update'
/** The fillfactors compareWriteScenarios rewrites a copy of the table with: full pages, and two with room. */
export const DEFAULT_FILLFACTORS = [100, 90, 70]
/** Where a comparison's runs start: identical copies. */
export const DEFAULT_RUNS_ON = 'copy'
/** calibrateIngest's runs: rows a commit, connections, how long each run commits, and how many times each runs. */
export const DEFAULT_CALIBRATION_ROWS_PER_COMMIT = [1, 100, 1_000] as const
export const DEFAULT_CALIBRATION_CONNECTIONS = [1, 4] as const
export const DEFAULT_CALIBRATION_SECONDS = 2
export const DEFAULT_CALIBRATION_ROUNDS = 3
/** The IOPS a calibration does not measure: a server the runs reach is on a local disk more often than on gp3's baseline. */
export const DEFAULT_CALIBRATION_STORAGE = 'nvme'
/** How long each interval of watchWal (walcost top) lasts. */
export const DEFAULT_WATCH_INTERVAL_MS = 2_000
/** inspectWal's worker threads at most: past this, reading files, not parsing them, is what waits. */
export const MAX_INSPECT_WORKERS = 8
/** WAL a worker thread takes at least: a worker's start costs about what parsing this much does. */
export const BYTES_A_WORKER = 64 * 1024 * 1024
/** Where `walcost exporter` (serveWalMetrics) listens: loopback only, on a port of the range Prometheus' exporters use (9100-9999). */
export const DEFAULT_EXPORTER_LISTEN = '127.0.0.1:9399'
/** How often the exporter reads the WAL: each read also reads the catalog that names relations, so not every second. */
export const DEFAULT_EXPORTER_INTERVAL_MS = 5_000
/** Relations a database the exporter gives series of their own; the rest are summed as relation="other". */
export const DEFAULT_EXPORTER_TOP = 50
/** A reader that lost its server tries again after the first wait, doubling it up to the second. */
export const RECONNECT_BACKOFF_MS = { min: 1_000, max: 30_000 } as const
/** How long walcost top goes on trying to connect again before it gives up (--reconnect-seconds). */
export const DEFAULT_RECONNECT_MS = 60_000
