// Units and PostgreSQL's page constants, in one place.

/** Decimal megabyte: every size and rate walcost reports (MB, MB/s, GB/day) is decimal. */
export const MB = 1_000_000
/** PostgreSQL's own "MB" in memory settings (shared_buffers = 128MB) is binary. */
export const MIB = 1024 * 1024

/** The default block size (BLCKSZ), where the server's own is not known (a description, not a database). */
export const BLOCK_SIZE = 8192
/** PageHeaderData of a heap or index page. */
export const PAGE_HEADER = 24
/** ItemIdData: one line pointer a tuple. */
export const LINE_POINTER = 4
/** BTPageOpaqueData at the end of every B-tree page. */
export const BTREE_SPECIAL = 16
/** A B-tree's fillfactor where the index sets none (BTREE_DEFAULT_FILLFACTOR). */
export const BTREE_DEFAULT_FILLFACTOR = 90
/** A hash index's fillfactor where the index sets none (HASH_DEFAULT_FILLFACTOR). */
export const HASH_DEFAULT_FILLFACTOR = 75
/** PostgreSQL's default gin_pending_list_limit (4MB), in bytes. */
export const GIN_DEFAULT_PENDING_LIST_LIMIT = 4 * MIB
/** PostgreSQL's default work_mem (4MB), in bytes: what an insert's merge of a GIN pending list gathers keys in. */
export const DEFAULT_WORK_MEM = 4 * MIB
/** XLogPageHeaderData, and XLogLongPageHeaderData on the first page of a segment. */
export const XLOG_SHORT_PAGE_HEADER = 24
export const XLOG_LONG_PAGE_HEADER = 40
/** A heap's fillfactor where the table sets none (HEAP_DEFAULT_FILLFACTOR). */
export const HEAP_DEFAULT_FILLFACTOR = 100
/** PostgreSQL's default wal_level. */
export const DEFAULT_WAL_LEVEL = 'replica'
