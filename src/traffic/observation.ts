import type { BadFile, SkippedFile, WalGap } from '../wal/archive.js'
import type { RecordTypeWal } from '../wal/attribution.js'
import type { FpiReasons, TransactionCounts, UnattributedWal } from '../wal/observe-tally.js'
import type { ServerFacts, WalSource } from '../wal/server.js'
import type { StatWalCounters } from '../wal/snapshot.js'
import type { StatementsWal } from '../wal/statement-wal.js'

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
export interface WalObservation<Source extends 'server' | 'files' = 'server' | 'files'> {
  kind: 'wal-observation'
  window: {
    startLsn: string
    endLsn: string
    /** The LSN distance. */
    bytes: number
    /** Records and images in the window, from the WAL; null where it could not be read. */
    records: number | null
    fpiCount: number | null
    /** How long the window was open; null for WAL read from files, where it is not known. */
    durationMs: Source extends 'server' ? number : null
    /**
     * pg_stat_wal's difference over the window, cluster-wide. Other backends send their counters
     * when they go idle, at most once a second (and then within 10 s), so a short window misses part
     * of theirs; `bytes` above is exact. null for WAL read from files.
     */
    statWal: Source extends 'server' ? StatWalCounters : null
  }
  /** Most bytes first; null where the WAL could not be read (see attributionNote). */
  relations: ObservedRelation[] | null
  fpiReasons: FpiReasons | null
  transactions: TransactionCounts | null
  /** WAL of no relation by kind, most bytes first; null where the WAL could not be read. */
  unattributed: UnattributedWal[] | null
  /**
   * With 'lsn' only, where pg_stat_statements is installed: the WAL each statement took in the
   * window, a coarser source than the WAL (a statement counts whole when it ends; planning,
   * commits, checkpoints and background work count nowhere, so the sum is below `window.bytes`). null with
   * 'wal', and where pg_stat_statements cannot be read (attributionNote says why).
   */
  statements: StatementsWal | null
  /** 'wal': read from the WAL itself; 'lsn': the window's totals only. */
  attribution: 'wal' | 'lsn'
  /**
   * Where the WAL was read: 'replication' (streamed over a replication connection) or 'files' (the
   * segments, or the files given to inspectWal) with 'wal'; with 'lsn', 'statements' where
   * pg_stat_statements gave the WAL by statement, else 'totals'.
   */
  walSource: WalSource
  /** With 'lsn', what was not possible and the grant that makes it possible. */
  attributionNote: string | null
  notes: string[]
  /** The window was ended early (observeWal's `stop`, walcost observe's SIGINT or SIGTERM): it covers what was written until then. */
  partial: boolean
  /** The server observed; null for WAL read from files (see `files`). */
  server: Source extends 'server' ? ServerFacts & { backend: 'pglite' | 'pg' } : null
  /** For WAL read from files (inspectWal), what was read and what was not; null for a server's window. */
  files: Source extends 'files' ? InspectedFiles : null
}

/** What inspectWal read: the files, and every part of the range it could not. */
export interface InspectedFiles {
  /** PostgreSQL's major, from the pages' magic. */
  major: number
  blockSize: number
  segmentSize: number
  /** Segment files read. */
  read: number
  /** The newest timeline of the files, whose history was followed, and where it switched. */
  timeline: number
  switches: { parent: number; switchLsn: string }[]
  /** Segments missing from the range: their WAL is not in the totals. */
  gaps: WalGap[]
  /** Files given or found that were not read (recycled, not on the history followed, not WAL by name). */
  skipped: SkippedFile[]
  /** Files left out by skipBad, with what was wrong in each. */
  bad: BadFile[]
  /** The newest file's WAL ended before the file (the segment the server was writing): where. */
  endOfWal: { lsn: string; file: string } | null
  /** A record that begins in the last file and goes on past it, not counted. */
  unfinished: { lsn: string; file: string } | null
}
