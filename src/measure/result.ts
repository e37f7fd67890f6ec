import type { ServerFacts, WalSource } from '../wal/server.js'
import type { StatWalCounters } from '../wal/snapshot.js'
import type { SyntheticOrigin } from './synthetic.js'

/** Records of one type, e.g. `Heap/INSERT` or `Btree/SPLIT_R`. */
export interface RecordTypeCost {
  /** resource manager / record type, as pg_walinspect and pg_waldump name them. */
  type: string
  records: number
  /** Their bytes (xl_tot_len), images included. */
  walBytes: number
  fpiCount: number
  fpiBytes: number
}

/** WAL our transaction wrote to one relation: records plus their images, and by record type. */
export interface RelationCost {
  /** Records whose first block is this relation's. */
  records: number
  /** Their bytes (xl_tot_len), images included. */
  walBytes: number
  fpiCount: number
  fpiBytes: number
  /** The same, by record type, most bytes first. */
  recordTypes: RecordTypeCost[]
}

export interface IndexCost extends RelationCost {
  name: string
}

/**
 * Any other relation our transaction wrote: a trigger's table and its indexes, a foreign key's
 * parent (its rows locked with Heap/LOCK), another partition, a sequence.
 */
export interface OtherRelationCost extends RelationCost {
  /** As regclass prints it; for a relation the batch created and the rollback removed, its relfilenode. */
  name: string
  kind: 'table' | 'index' | 'toast' | 'sequence' | 'materialized view' | 'rolled back'
}

/** The five parts of walBytes; they add up to it exactly. */
export interface Breakdown {
  /** Heap records of the table and its TOAST (table and index), without image bytes. */
  heapBytes: number
  /** Records of the table's indexes, without image bytes. */
  indexBytes: number
  /** Records of every other relation our transaction wrote (otherRelations), without image bytes. */
  otherRelationBytes: number
  /** Every full-page image byte of our records. */
  fpiBytes: number
  /** Our records that name no relation (commit or abort, XLOG), 8-byte record alignment and our share of WAL page headers. */
  otherBytes: number
}

/** The batch's rows by what it did to them: the transaction's own counters (pg_stat_xact_user_tables). */
export interface Writes {
  inserted: number
  updated: number
  /** Updates that were HOT: the new version on the same page, and no index entries. */
  hotUpdated: number
  deleted: number
}

/** Rows the batch inserted, updated or deleted: what a write's per-row figures divide by. */
export const changedRows = (writes: Writes): number => writes.inserted + writes.updated + writes.deleted

/** WAL per row the batch inserted, updated or deleted; null when it changed none. */
export function bytesPerChangedRow(cost: Pick<InsertCost, 'walBytes' | 'writes'>): number | null {
  const rows = changedRows(cost.writes)
  return rows > 0 ? cost.walBytes / rows : null
}

/**
 * How long the batch took, as the measuring session saw it: the server's work on its rows plus the
 * round trips that sent them (no commit: the transaction is rolled back). What a backend spends a
 * row, for the ceiling's server CPU limit.
 */
export interface BatchTiming {
  /** From the batch's first statement to the end of its last. */
  batchMs: number
  /** batchMs / rows (null when nothing was inserted). */
  msPerRow: number | null
  /**
   * The whole call of measureInsertCost or measureWriteCost: connecting (on the embedded default,
   * opening a fresh copy of its database), setup, the batch and reading its WAL back. null for a
   * run inside another entry point (a comparison's, the audit's).
   */
  callMs: number | null
  /** Statements the batch sent (null: SQL text or the app's code, whose statements walcost does not count). */
  statements: number | null
  /**
   * batchMs apart from how the batch was sent: a statement's time and a row's, for a batch of
   * `rows` or `count` (null otherwise, or with timingProbe: false). estimateIngestCeiling builds a
   * transaction of any shape from them.
   */
  parts: TimingParts | null
}

/**
 * What a statement costs and what a row costs, from a probe after the batch (see
 * measure/timing-parts.ts). Times are from walcost's side of the connection: a statement's includes
 * its round trip.
 */
export interface TimingParts {
  /** An INSERT's own time beyond its rows: round trip, parse, plan, executor start. From the probe. */
  msPerStatement: number
  /** A COPY's own time beyond its rows: its start and end, and the round trip. From the probe. */
  copyMsPerStatement: number
  /** A row's time inside INSERT ... VALUES, one or many rows a statement. */
  insertMsPerRow: number
  /** A row's time inside COPY. */
  copyMsPerRow: number
  /**
   * The part the batch's own time gave: 'rows' where its rows made most of it (COPY, many rows an
   * INSERT), 'statements' where its statements did (one INSERT a row). That part is the batch's
   * time less the other part as the probe timed it, at the batch's size (measured); the same part
   * of the other method is scaled alike, and the other part is the probe's (derived).
   */
  measured: 'rows' | 'statements'
  /** The measured part over the probe's: far from 1, the probe ran at another pace than the batch (a busy machine), or the batch's rows cost more in its larger indexes. */
  scale: number
  /** The probe: synthetic rows sent in each shape, rolled back; the faster of two rounds, ms. */
  probe: Array<{ method: 'insert' | 'multirow' | 'copy'; rows: number; rowsPerStatement: number; ms: number }>
}

/** How the measurement ran. */
export interface Scenario {
  /** The table as resolved: schema-qualified and quoted. */
  table: string
  batch: 'sql' | 'rows' | 'count' | 'run'
  method: 'insert' | 'multirow' | 'copy'
  batchSize: number
  /** CHECKPOINT ran just before the batch. */
  checkpoint: boolean
  /** Indexes dropped for the batch (and restored by the rollback). */
  droppedIndexes: string[]
  /** Settings changed for the measuring transaction only (SET LOCAL), e.g. wal_compression. */
  settings: Record<string, string>
  /** How a `count` batch's rows were made: from which columns of how many sampled real rows; null for other batches. */
  synthetic: SyntheticOrigin | null
}

/** A step that could not run, and how to enable it. */
export interface Skipped {
  step: 'checkpoint' | 'attribution'
  reason: string
}

/**
 * What one insert batch wrote to WAL. JSON-serialisable: the CLI's --json prints exactly this.
 */
export interface InsertCost {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'insert-cost'
  /** Rows the batch inserted into the table (the transaction's own counter). */
  rows: number
  /** Sum of pg_column_size of the inserted values: column data only, no header, padding or line pointer. */
  logicalBytes: number
  /** How logicalBytes was read: the pages the batch extended, those scaled to all rows, or a scan of the table. */
  logicalBytesSource: 'wal' | 'new-pages' | 'new-pages-scaled' | 'table-scan'
  /** Insert-LSN distance from before the batch to after it. */
  windowBytes: number
  /** The part of the window the batch wrote (equal to windowBytes when attribution cannot tell). */
  walBytes: number
  /** windowBytes - walBytes: other sessions and background processes; null when attribution is 'lsn' (unknown). */
  noiseBytes: number | null
  /** Our records (pg_stat_wal's cluster-wide count when attribution is 'lsn'; null if neither is known). */
  walRecords: number | null
  /** The batch's own duration and its milliseconds a row. */
  timing: BatchTiming
  /** Our full-page images (pg_stat_wal's cluster-wide count when attribution is 'lsn'; null if neither is known). */
  fpiCount: number | null
  /** walBytes / logicalBytes (null when nothing was inserted). */
  amplification: number | null
  /** walBytes / rows (null when nothing was inserted). */
  bytesPerRow: number | null
  /** null when attribution is 'lsn': see attributionNote. */
  breakdown: Breakdown | null
  /** Rows inserted, updated (HOT among them) and deleted by the batch. */
  writes: Writes
  /**
   * Non-HOT updates of the table whose new version went to another page (their record names both
   * pages): those found no room on the old one. null unless walcost read the WAL itself.
   */
  updatesToNewPage: number | null
  /** The table's own records (heap and TOAST). */
  heap: RelationCost | null
  indexes: IndexCost[]
  /** Every other relation our transaction wrote, most bytes first (empty when attribution is 'lsn'). */
  otherRelations: OtherRelationCost[]
  /**
   * How the window was split: 'wal', walcost's own reading of the WAL segments (exact, each image
   * under its own relation); 'walinspect', pg_walinspect's text (images under the record's first
   * relation); 'lsn', totals only.
   */
  attribution: 'wal' | 'walinspect' | 'lsn'
  /**
   * Where the WAL was read: 'replication' (streamed over a replication connection) or 'files' (the
   * segments) with attribution 'wal', 'walinspect', or 'totals' with 'lsn'.
   */
  walSource: Exclude<WalSource, 'statements'>
  /** Why attribution is not 'wal', and the grant that would give more. */
  attributionNote: string | null
  /**
   * pg_stat_wal's difference over the measuring transaction: cluster-wide, a cross-check. null for
   * a measurement inside a caller's transaction, where our own counters are not yet published.
   */
  statWal: StatWalCounters | null
  window: { startLsn: string; endLsn: string }
  scenario: Scenario
  server: ServerFacts & { backend: 'pglite' | 'pg' }
  /** One sentence for each setting that changes this measurement: what it does to it. */
  configNotes: string[]
  /** A checkpoint ran during the window (not the one walcost asked for before it): its images are in the numbers. */
  checkpointDuringWindow: boolean
  /** What to keep in mind about this particular measurement. */
  notes: string[]
  skipped: Skipped[]
  durationMs: number
}
