import { z } from 'zod'
import {
  DEFAULT_CHECKPOINT_TIMEOUT_S,
  DEFAULT_CONNECTIONS,
  DEFAULT_REPLICAS,
  DEFAULT_ROWS_PER_COMMIT,
  DEFAULT_STORAGE,
} from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { parseOptions } from '../core/options.js'
import { MB, BLOCK_SIZE as PAGE } from '../core/units.js'
import type { InsertCost } from '../measure/result.js'
import type { InsertCostPrediction } from './predict.js'

/** A storage profile: sustained write bandwidth, write IOPS, and the latency of one WAL flush at commit. */
export const storageSchema = z.strictObject({
  writeMBps: z.number().positive().describe('sustained write bandwidth, MB/s (10^6 bytes)'),
  iops: z.number().positive().describe('sustained write operations per second'),
  fsyncMs: z.number().positive().describe('latency of one WAL flush at commit, ms'),
  source: z.string().optional().describe('where the figures come from'),
  flushes: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('how many WAL flushes fsyncMs is the average of (from calibrateStorage)'),
})

export type Storage = z.infer<typeof storageSchema>

/** Storage presets and where their figures come from (MB = 10^6 bytes). */
export const STORAGE_PRESETS = {
  gp3: {
    writeMBps: 125,
    iops: 3_000,
    fsyncMs: 11,
    source:
      "AWS gp3 EBS at its baseline (3,000 IOPS, 125 MB/s); 11 ms WAL fsync at commit as measured in the field notes' 2026 conference benchmark",
  },
  nvme: {
    writeMBps: 1_000,
    iops: 200_000,
    fsyncMs: 1.5,
    source:
      "local NVMe instance store: 1.5 ms WAL fsync at commit from the field notes' benchmark; 200,000 IOPS and 1,000 MB/s are a conservative reading of datacenter NVMe specifications (assumed, not measured)",
  },
  'io2-16k': {
    writeMBps: 1_000,
    iops: 16_000,
    fsyncMs: 1,
    source:
      'AWS io2 provisioned at 16,000 IOPS (its documented throughput allows 1,000 MB/s); ~1 ms flush from its sub-millisecond latency class (assumed)',
  },
} satisfies Record<string, Storage>

export type StoragePreset = keyof typeof STORAGE_PRESETS

/** What the estimate starts from: a measurement, a prediction, or bytes per row. */
export type CostInput = InsertCost | InsertCostPrediction | { bytesPerRow: number; dataBytesPerRow?: number }

/**
 * Options of {@link estimateIngestCeiling}.
 *
 * @example
 * const options: CeilingOptions = { storage: 'gp3', targetRowsPerSec: 50_000, rowsPerCommit: 100, connections: 8 }
 */
export const ceilingOptionsSchema = z.strictObject({
  storage: z
    .union([z.enum(Object.keys(STORAGE_PRESETS) as [StoragePreset, ...StoragePreset[]]), storageSchema], {
      error: `expected a preset (${Object.keys(STORAGE_PRESETS).join(', ')}) or { writeMBps, iops, fsyncMs }`,
    })
    .default(DEFAULT_STORAGE)
    .describe(`a preset (${Object.keys(STORAGE_PRESETS).join(', ')}) or { writeMBps, iops, fsyncMs }`),
  targetRowsPerSec: z.number().positive().optional().describe('the ingest rate to plan for'),
  rowsPerCommit: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_ROWS_PER_COMMIT)
    .describe('rows per transaction: each commit waits for a WAL flush'),
  connections: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_CONNECTIONS)
    .describe('sessions inserting at once; their commits share flushes (group commit)'),
  replicas: z.number().int().min(0).default(DEFAULT_REPLICAS).describe('streaming replicas, each receiving all WAL'),
  checkpointTimeout: z
    .number()
    .positive()
    .default(DEFAULT_CHECKPOINT_TIMEOUT_S)
    .describe('seconds between checkpoints, for the writeback estimate'),
  dataBytesPerRow: z
    .number()
    .positive()
    .optional()
    .describe('bytes of column data a row (default: from the measurement or prediction)'),
})

export type CeilingOptions = z.input<typeof ceilingOptionsSchema>

export type LimitName = 'write bandwidth' | 'IOPS' | 'commit flush latency'

export interface IngestCeiling {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'ceiling'
  bytesPerRow: number
  /** The preset's name, or 'custom' for figures given as an object. */
  storageName: StoragePreset | 'custom'
  storage: Storage
  rowsPerCommit: number
  connections: number
  /** The rate the WAL figures are given at: the target, or without one the ceiling itself. */
  atRowsPerSec: number
  /** WAL written at atRowsPerSec. */
  walMBps: number
  walGBPerDay: number
  dataMBps: number | null
  /** Data files written back by checkpoints and the background writer (new heap and index pages). */
  writebackMBps: number
  pagesDirtiedPerCheckpoint: number
  /** WAL sent to each replica, and archived, per day. */
  replicationMBpsPerReplica: number | null
  archiveGBPerDay: number
  /** Rows per second at which each limit binds. */
  limits: Record<LimitName, number>
  maxRowsPerSec: number
  bindingLimit: LimitName
  /** maxRowsPerSec / targetRowsPerSec (null without a target). */
  headroom: number | null
  assumptions: string[]
}

function costFigures(cost: CostInput): {
  bytesPerRow: number
  dataBytesPerRow: number | null
  growthBytesPerRow: number | null
} {
  if ('logicalBytesPerRow' in cost) {
    // A prediction: heap tuples and index tuples as they land on pages (line pointers, leaf fill).
    const growth = cost.tuple.onPage + 4 + cost.indexes.reduce((sum, index) => sum + (index.tupleSize + 4) / 0.9, 0)
    return { bytesPerRow: cost.bytesPerRow, dataBytesPerRow: cost.logicalBytesPerRow, growthBytesPerRow: growth }
  }
  if ('walBytes' in cost) {
    if (cost.bytesPerRow === null)
      throw new WalcostError('INVALID_OPTIONS', 'cost: the measurement inserted no rows.', { field: 'cost' })
    return {
      bytesPerRow: cost.bytesPerRow,
      dataBytesPerRow: cost.rows ? cost.logicalBytes / cost.rows : null,
      growthBytesPerRow: null,
    }
  }
  return { bytesPerRow: cost.bytesPerRow, dataBytesPerRow: cost.dataBytesPerRow ?? null, growthBytesPerRow: null }
}

/** estimateIngestCeiling without the notebook display; the exported entry point is in api.ts. */
export function estimateIngestCeiling(cost: CostInput, options: CeilingOptions = {}): IngestCeiling {
  if (typeof cost !== 'object' || cost === null || typeof cost.bytesPerRow !== 'number' || !(cost.bytesPerRow > 0)) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'cost: give a measurement, a prediction, or { bytesPerRow } with a positive number.',
      { field: 'cost' },
    )
  }
  const parsed = parseOptions(ceilingOptionsSchema, options)
  const storageName = typeof parsed.storage === 'string' ? parsed.storage : 'custom'
  const storage: Storage = typeof parsed.storage === 'string' ? STORAGE_PRESETS[parsed.storage] : parsed.storage
  const figures = costFigures(cost)
  const dataBytesPerRow = parsed.dataBytesPerRow ?? figures.dataBytesPerRow
  const assumptions = [
    `group commit: up to ${parsed.connections} concurrent commits share one WAL flush of ${storage.fsyncMs} ms`,
    'WAL and data-file writeback share the write bandwidth and IOPS; reads, vacuum and other tables are not counted',
  ]
  // New pages a row adds to the table and its indexes: written back once a checkpoint cycle.
  const growthBytesPerRow =
    figures.growthBytesPerRow ??
    (dataBytesPerRow === null ? figures.bytesPerRow / 3 : dataBytesPerRow + 28 + 0.5 * figures.bytesPerRow)
  if (figures.growthBytesPerRow === null)
    assumptions.push(
      "data-file growth per row estimated from the row's data and its WAL (a prediction gives it exactly)",
    )
  const commitsPerRow = 1 / parsed.rowsPerCommit
  const flushesPerRow = commitsPerRow / parsed.connections
  const limits: Record<LimitName, number> = {
    'write bandwidth': (storage.writeMBps * MB) / (figures.bytesPerRow + growthBytesPerRow),
    IOPS: storage.iops / (flushesPerRow + growthBytesPerRow / PAGE),
    'commit flush latency': (parsed.connections * parsed.rowsPerCommit * 1000) / storage.fsyncMs,
  }
  const [bindingLimit, maxRowsPerSec] = (Object.entries(limits) as Array<[LimitName, number]>).reduce((low, entry) =>
    entry[1] < low[1] ? entry : low,
  )
  const target = parsed.targetRowsPerSec ?? null
  const rate = target ?? maxRowsPerSec
  const perSecond = (bytesPerRow: number) => (bytesPerRow * rate) / MB
  const walMBps = perSecond(figures.bytesPerRow)
  const walGBPerDay = (walMBps * 86_400) / 1_000
  return {
    kind: 'ceiling',
    bytesPerRow: figures.bytesPerRow,
    storageName,
    storage,
    rowsPerCommit: parsed.rowsPerCommit,
    connections: parsed.connections,
    atRowsPerSec: rate,
    walMBps,
    walGBPerDay,
    dataMBps: dataBytesPerRow === null ? null : perSecond(dataBytesPerRow),
    writebackMBps: perSecond(growthBytesPerRow),
    pagesDirtiedPerCheckpoint: Math.ceil((growthBytesPerRow * rate * parsed.checkpointTimeout) / PAGE),
    replicationMBpsPerReplica: parsed.replicas > 0 ? walMBps : null,
    archiveGBPerDay: walGBPerDay,
    limits,
    maxRowsPerSec,
    bindingLimit,
    headroom: target === null ? null : maxRowsPerSec / target,
    assumptions,
  }
}
