import type { RecordTypeWal } from '../wal/attribution.js'
import type { FpiReasons, TransactionCounts, UnattributedWal } from '../wal/observe-tally.js'
import type { ServerFacts } from '../wal/server.js'
import type { StatWalCounters } from '../wal/snapshot.js'

/** What a relation is, from pg_class.relkind: the kinds that have files. */
export type RelationKind = 'table' | 'index' | 'toast' | 'sequence' | 'matview'

/** One file a relation had in the window: a rewrite (TRUNCATE, CLUSTER, VACUUM FULL, ...) gives it another. */
export interface ObservedFile {
  tablespace: number
  relfilenode: number
  /** Made inside the window (Storage/CREATE). */
  created: boolean
  /** Deleted inside the window by a commit (DROP, the old file of a rewrite), or by an abort (a new one). */
  dropped: boolean
}

/** The WAL one relation took in the window, over every file it had. */
export interface ObservedRelation {
  /** null for a file no catalog read at the window's start or end names (created and dropped inside it, or another database's). */
  name: string | null
  schema: string | null
  kind: RelationKind | null
  /** An index's table, a TOAST table's table (schema-qualified); null for the others. */
  table: string | null
  /** Its database's name; null for shared catalogs (database 0) and a database that no longer exists. */
  database: string | null
  databaseOid: number
  files: ObservedFile[]
  /** Records whose first block reference is this relation's. */
  records: number
  /** Those records' bytes without their images, plus the images of this relation's blocks. */
  bytes: number
  fpiCount: number
  fpiBytes: number
  /** The same by record type, most bytes first. */
  recordTypes: RecordTypeWal[]
}

/**
 * The WAL of everything between two positions, from every session, committed or not: which tables
 * and indexes it came from. `relations` and `unattributed` add up to `window.bytes` exactly.
 */
export interface WalObservation {
  kind: 'wal-observation'
  window: {
    startLsn: string
    endLsn: string
    /** The LSN distance. */
    bytes: number
    /** Records and images in the window, from the WAL; null where it could not be read. */
    records: number | null
    fpiCount: number | null
    durationMs: number
    /**
     * pg_stat_wal's difference over the window, cluster-wide. Other backends send their counters
     * when they go idle, at most once a second (and then within 10 s), so a short window misses part
     * of theirs; `bytes` above is exact.
     */
    statWal: StatWalCounters
  }
  /** Most bytes first; null where the WAL could not be read (see attributionNote). */
  relations: ObservedRelation[] | null
  fpiReasons: FpiReasons | null
  transactions: TransactionCounts | null
  /** WAL of no relation by kind, most bytes first; null where the WAL could not be read. */
  unattributed: UnattributedWal[] | null
  /** 'wal': read from the WAL itself; 'lsn': the window's totals only. */
  attribution: 'wal' | 'lsn'
  /** With 'lsn', what was not possible and the grant that makes it possible. */
  attributionNote: string | null
  notes: string[]
  server: ServerFacts & { backend: 'pglite' | 'pg' }
}
