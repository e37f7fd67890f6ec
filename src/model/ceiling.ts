import { z } from 'zod'
import {
  DEFAULT_CHECKPOINT_TIMEOUT_S,
  DEFAULT_CLIENT_MS_PER_COMMIT,
  DEFAULT_CLIENT_MS_PER_ROW,
  DEFAULT_COMMIT_MS,
  DEFAULT_CONNECTIONS,
  DEFAULT_PLAN_METHOD,
  DEFAULT_REPLICAS,
  DEFAULT_ROWS_PER_COMMIT,
  DEFAULT_STORAGE,
} from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { integer } from '../core/format.js'
import { parseOptions } from '../core/options.js'
import { MB, BLOCK_SIZE as PAGE } from '../core/units.js'
import type { InsertCost, TimingParts } from '../measure/result.js'
import { statementsFor } from '../measure/timing-parts.js'
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

/**
 * What the estimate starts from: a measurement (its `timing` gives the server's time a row), a
 * prediction, or bytes per row (with `msPerRow`, the server's time a row, where known).
 */
export type CostInput =
  | InsertCost
  | InsertCostPrediction
  | { bytesPerRow: number; dataBytesPerRow?: number; msPerRow?: number }

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
  method: z
    .enum(['insert', 'multirow', 'copy'])
    .default(DEFAULT_PLAN_METHOD)
    .describe(
      "how the planned ingest sends its rows: 'insert', one INSERT a row; 'multirow', rowsPerStatement rows an INSERT; 'copy', rowsPerStatement rows a COPY. A measurement's timing.parts builds the transaction from it, however the measurement itself sent its rows",
    ),
  rowsPerStatement: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      "rows an INSERT ('multirow') or a COPY ('copy') carries; default: rowsPerCommit, one statement a transaction",
    ),
  connections: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_CONNECTIONS)
    .describe('sessions inserting at once; their commits share flushes (group commit)'),
  cores: z
    .number()
    .positive()
    .optional()
    .describe(
      "the server's cores for its sessions (fewer when a load generator shares the machine); default: every connection runs at once",
    ),
  insertRowsPerSec: z
    .number()
    .positive()
    .optional()
    .describe(
      'rows a second that sessions inserting into the table at once reach together in commits so large their flushes hardly count (calibrateIngest measures it): where they contend for its pages and the WAL, less than the cores allow; default: what the cores allow',
    ),
  commitMs: z
    .number()
    .min(0)
    .default(DEFAULT_COMMIT_MS)
    .describe(
      "server time a transaction takes beyond its rows: statement, commit record, round trip (calibrateIngest measures it); given, it stands in for the first statement's time from a measurement's timing.parts",
    ),
  clientMsPerRow: z
    .number()
    .min(0)
    .default(DEFAULT_CLIENT_MS_PER_ROW)
    .describe(
      "CPU a row of a load generator on the server's cores, which makes each transaction's rows before sending them (calibrateIngest measures its own); 0: the client runs elsewhere",
    ),
  clientMsPerCommit: z
    .number()
    .min(0)
    .default(DEFAULT_CLIENT_MS_PER_COMMIT)
    .describe(
      "CPU a transaction of a load generator on the server's cores beyond its rows (calibrateIngest measures its own); 0: the client runs elsewhere",
    ),
  commitsPerFlush: z
    .number()
    .min(1)
    .optional()
    .describe(
      'commits one WAL flush carries, as measured (calibrateIngest); default: modelled from the flush and the server time',
    ),
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

export type LimitName = 'write bandwidth' | 'IOPS' | 'commit flush latency' | 'server CPU'

export interface IngestCeiling {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'ceiling'
  bytesPerRow: number
  /** The preset's name, or 'custom' for figures given as an object. */
  storageName: StoragePreset | 'custom'
  storage: Storage
  rowsPerCommit: number
  /** How the planned ingest sends its rows, and how many a statement carries (1 for 'insert'). */
  method: 'insert' | 'multirow' | 'copy'
  rowsPerStatement: number
  statementsPerCommit: number
  connections: number
  /** The server's cores for its sessions, as given (null: not bounded). */
  cores: number | null
  /** Rows a second sessions inserting at once reach together, as given (null: what the cores allow). */
  insertRowsPerSec: number | null
  /**
   * Server time a row of the planned transaction, its statements' share included: from a
   * measurement's timing.parts (statements and rows apart), else its msPerRow as it sent its rows
   * (null: unknown, and so is the server CPU limit).
   */
  msPerRow: number | null
  commitMs: number
  /** A load generator's CPU a row and a transaction on the server's cores, as given (0: it runs elsewhere). */
  clientMsPerRow: number
  clientMsPerCommit: number
  /** Server time of one transaction: its statements and rows, plus commitMs (null when msPerRow is unknown). */
  transactionMs: number | null
  /** One WAL flush: fsyncMs plus the WAL of the commits it carries, written at writeMBps. */
  flushMs: number
  /** Commits one flush carries: as given (measured), or modelled. */
  commitsPerFlush: number
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
  /** Rows per second at which each limit binds on its own (null: unknown). */
  limits: Record<LimitName, number | null>
  /**
   * The ceiling: the connections' rate (each works its transaction, waits for its rows and its
   * flush, on the cores they share), capped by the storage's limits.
   */
  maxRowsPerSec: number
  bindingLimit: LimitName
  /** maxRowsPerSec / targetRowsPerSec (null without a target). */
  headroom: number | null
  assumptions: string[]
}

/** The figures of a cost the ceiling uses. */
interface CostFigures {
  bytesPerRow: number
  dataBytesPerRow: number | null
  growthBytesPerRow: number | null
  /** The time a row as the cost was measured or given, statements included (null: unknown). */
  msPerRow: number | null
  /** A measurement's statements and rows apart (null: a prediction, bytes per row, or an older measurement). */
  parts: TimingParts | null
  /** What the measurement says its bytes leave out of steady ingest (a GIN pending list not merged). */
  shortOfSteady: string[]
}

function costFigures(cost: CostInput): CostFigures {
  if ('logicalBytesPerRow' in cost) {
    // A prediction: heap tuples and index tuples as they land on pages (line pointers, leaf fill).
    const growth = cost.tuple.onPage + 4 + cost.indexes.reduce((sum, index) => sum + (index.tupleSize + 4) / 0.9, 0)
    return {
      bytesPerRow: cost.bytesPerRow,
      dataBytesPerRow: cost.logicalBytesPerRow,
      growthBytesPerRow: growth,
      msPerRow: null,
      parts: null,
      shortOfSteady: [],
    }
  }
  if ('walBytes' in cost) {
    if (cost.bytesPerRow === null)
      throw new WalcostError('INVALID_OPTIONS', 'cost: the measurement inserted no rows.', { field: 'cost' })
    return {
      bytesPerRow: cost.bytesPerRow,
      dataBytesPerRow: cost.rows ? cost.logicalBytes / cost.rows : null,
      growthBytesPerRow: null,
      // A measurement saved before walcost timed its batch, or split its time, has none.
      msPerRow: cost.timing?.msPerRow ?? null,
      parts: cost.timing?.parts ?? null,
      shortOfSteady: (cost.notes ?? []).filter((note) => note.includes('pending list')),
    }
  }
  const msPerRow = cost.msPerRow ?? null
  if (msPerRow !== null && !(msPerRow > 0))
    throw new WalcostError('INVALID_OPTIONS', 'cost.msPerRow: give a positive number of milliseconds a row.', {
      field: 'cost.msPerRow',
    })
  return {
    bytesPerRow: cost.bytesPerRow,
    dataBytesPerRow: cost.dataBytesPerRow ?? null,
    growthBytesPerRow: null,
    msPerRow,
    parts: null,
    shortOfSteady: [],
  }
}

/** Rows a statement of the plan carries: one for 'insert'; for the others as given, or the whole transaction. */
function plannedRowsPerStatement(options: z.output<typeof ceilingOptionsSchema>): number {
  const { method, rowsPerCommit, rowsPerStatement } = options
  if (method === 'insert') {
    if (rowsPerStatement !== undefined && rowsPerStatement !== 1)
      throw new WalcostError(
        'INVALID_OPTIONS',
        `rowsPerStatement: method 'insert' sends one row an INSERT; for ${rowsPerStatement} rows a statement, plan method 'multirow' or 'copy'.`,
        { field: 'rowsPerStatement' },
      )
    return 1
  }
  if (rowsPerStatement !== undefined && rowsPerStatement > rowsPerCommit)
    throw new WalcostError(
      'INVALID_OPTIONS',
      `rowsPerStatement: a statement cannot carry more rows than its transaction (rowsPerCommit ${rowsPerCommit}); give at most ${rowsPerCommit}.`,
      { field: 'rowsPerStatement' },
    )
  return rowsPerStatement ?? rowsPerCommit
}

/**
 * The server's time for one planned transaction's statements and rows, with how it was had, in
 * words: from a measurement's parts, each statement and row at its own time, whatever way the
 * measurement sent its rows; else the time a row as the cost was measured or given.
 */
function transactionWork(
  figures: CostFigures,
  method: 'insert' | 'multirow' | 'copy',
  rows: number,
  statements: number,
  commitGiven: boolean,
): { ms: number; words: string } | null {
  const { parts } = figures
  if (parts) {
    const byCopy = method === 'copy'
    const statementMs = byCopy ? parts.copyMsPerStatement : parts.msPerStatement
    const rowMs = byCopy ? parts.copyMsPerRow : parts.insertMsPerRow
    const kind = byCopy ? 'COPY' : 'INSERT'
    const timed = commitGiven ? statements - 1 : statements
    return {
      ms: timed * statementMs + rows * rowMs,
      words: `${integer(timed)} ${kind}${timed === 1 ? '' : 's'} x ${round(statementMs)} ms${commitGiven ? ` (the first in commitMs)` : ''} + ${integer(rows)} rows x ${round(rowMs)} ms, from the measurement's timing.parts`,
    }
  }
  if (figures.msPerRow === null) return null
  return {
    ms: rows * figures.msPerRow,
    words: `${integer(rows)} x ${round(figures.msPerRow)} ms a row, statements included as the cost was measured or given: its way of sending rows, not the plan's (a measurement of rows or count by this release has timing.parts)`,
  }
}

/**
 * Commits a flush carries when nobody measured it. Flushes run one at a time: a commit that arrives
 * while one runs waits for it, then goes in the next. A connection that works transactionMs between
 * its commits arrives ceil(transactionMs / flushMs) flushes after its last, so each flush carries
 * connections / (that + 1) commits, at least one; a single connection never shares one.
 */
export function modelledCommitsPerFlush(connections: number, transactionMs: number | null, flushMs: number): number {
  if (connections === 1) return 1
  if (transactionMs === null) return connections
  return Math.min(connections, Math.max(1, connections / (Math.ceil(transactionMs / flushMs) + 1)))
}

/**
 * A resource every transaction of a connection passes through: its time there, how many it serves
 * at once, whether it is a lock held while the session works at the cores (then only the wait for
 * it adds to the transaction's time; holding it is the cores' time), and how many of its services
 * a transaction takes that end only once their holder runs on the cores again (a flush, once per
 * commitsPerFlush commits: the backend that synced the WAL waits for a core, holding the flush,
 * before the commits it carries go on).
 */
interface Station {
  demandMs: number
  servers: number
  heldWhileWorking?: boolean
  coreWaitsPerTransaction?: number
}

/**
 * The longest a backend woken from its WAL flush waits for a core, ms: however many sessions queue
 * there, Linux's scheduler (EEVDF, 6.6+) runs a woken task once the running one has used its
 * slice, 0.75 ms x (1 + log2 of the cores, at most 8): 1.5 ms on 2 cores, 3 ms on 8 or more. The
 * WAL flushes timed under four sessions on 2 cores bear it out: 1.0-1.4 ms beyond the disk's own
 * time at 1,000 rows a commit, where a queue of whole transactions would be 4-5 ms.
 */
export function wakeupWaitMaxMs(cores: number): number {
  return 0.75 * (1 + Math.floor(Math.log2(Math.min(Math.max(cores, 1), 8))))
}

/**
 * Transactions a millisecond of `connections` sessions that each pass through every station in
 * turn, waiting where a station is busy: mean value analysis of the closed network (Reiser and
 * Lavenberg), a station of several servers taken as Seidmann does (a one-server queue at
 * demand / servers, the rest of its demand a delay). One connection gets 1 / (the demands' sum);
 * many approach the busiest station's rate smoothly, not at a corner, since they queue at each.
 * The cores are the first station.
 */
function closedNetworkThroughput(connections: number, stations: Station[], coreWaitMaxMs: number): number {
  const queued = stations.map(() => 0)
  let throughput = 0
  for (let sessions = 1; sessions <= connections; sessions++) {
    const cores = stations[0]
    const coresAhead = cores ? Math.min(coreWaitMaxMs, (cores.demandMs / cores.servers) * (queued[0] ?? 0)) : 0
    const waits = stations.map(({ demandMs, servers, heldWhileWorking, coreWaitsPerTransaction = 0 }, index) => {
      const serviceMs = demandMs + coreWaitsPerTransaction * coresAhead
      const share = serviceMs / servers
      const before = share * (queued[index] ?? 0)
      return heldWhileWorking
        ? { cycle: before, present: before + serviceMs }
        : { cycle: before + serviceMs, present: before + share }
    })
    throughput = sessions / waits.reduce((sum, wait) => sum + wait.cycle, 0)
    waits.forEach((wait, index) => {
      queued[index] = throughput * wait.present
    })
  }
  return throughput
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
  const { rowsPerCommit, connections, commitMs, clientMsPerRow, clientMsPerCommit, method } = parsed
  const insertRowsPerSec = parsed.insertRowsPerSec ?? null
  const cores = parsed.cores ?? null
  const rowsPerStatement = plannedRowsPerStatement(parsed)
  const statementsPerCommit = statementsFor(method, rowsPerCommit, rowsPerStatement)
  // A commitMs that was given (calibrateIngest's, from real commits) is the transaction's own time,
  // its first statement's included: it stands in for that statement's time from the probe.
  const commitGiven = (options as { commitMs?: unknown }).commitMs !== undefined
  const work = transactionWork(figures, method, rowsPerCommit, statementsPerCommit, commitGiven)
  const msPerRow = work === null ? null : work.ms / rowsPerCommit
  const transactionMs = work === null ? null : work.ms + commitMs
  const commitBytes = rowsPerCommit * figures.bytesPerRow
  const writeMs = (bytes: number) => bytes / (storage.writeMBps * 1_000)
  const commitsPerFlush =
    parsed.commitsPerFlush ??
    modelledCommitsPerFlush(connections, transactionMs, storage.fsyncMs + writeMs(commitBytes))
  // A flush writes the WAL of every commit it carries, then syncs it.
  const flushMs = storage.fsyncMs + writeMs(commitsPerFlush * commitBytes)
  const running = cores === null ? connections : Math.min(connections, cores)
  const coreWaitMaxMs = wakeupWaitMaxMs(cores ?? connections)
  // A load generator on the server's machine makes each transaction's rows before the server inserts them.
  const clientMs = rowsPerCommit * clientMsPerRow + clientMsPerCommit
  const assumptions = [
    `commit flush: ${round(flushMs)} ms a flush (${round(storage.fsyncMs)} ms a sync plus ${integer(commitsPerFlush * commitBytes)} bytes of WAL at ${round(storage.writeMBps)} MB/s), ${round(commitsPerFlush)} commits a flush (${parsed.commitsPerFlush === undefined ? (connections === 1 ? 'one connection shares no flush' : transactionMs === null ? 'assumed ideal: every connection in every flush, since the server time a row is unknown' : 'modelled: flushes run one at a time and a commit that misses one waits for the next') : 'as measured'})`,
    transactionMs === null
      ? 'server CPU: unknown, and not counted: the cost carries no server time a row (a measurement has it in timing; a prediction has none; give { bytesPerRow, msPerRow } to count it)'
      : `server CPU: ${round(transactionMs)} ms a transaction (${work?.words}${commitMs > 0 ? ` + ${round(commitMs)} ms a commit` : ', nothing a commit beyond its statements and rows (commitMs not given)'}), ${round(running)} sessions at once (${cores === null ? 'cores not given: every connection runs at once' : `connections bounded by ${cores} cores`}), ${insertRowsPerSec === null ? 'sessions inserting at once contend for nothing but the cores (insertRowsPerSec not given)' : `sessions inserting at once reach ${integer(insertRowsPerSec)} rows/s together at most (insertRowsPerSec, as measured), and queue for it`}; ${clientMs > 0 ? `a load generator in a process of its own on those cores makes each transaction's rows (${round(clientMs)} ms of its CPU a transaction)` : 'the client runs elsewhere (clientMsPerRow and clientMsPerCommit not given)'}; a connection then waits for its commit's flush, flushes run one at a time, each ending when its backend has a core again (at most a scheduler slice later: ${round(coreWaitMaxMs)} ms), and the connections queue at the cores and at the flush as a closed network (mean value analysis)`,
    'WAL and data-file writeback share the write bandwidth and IOPS; reads, vacuum and other tables are not counted',
    // The bytes a row are the measurement's: where it stopped short of a cost steady ingest pays, so does this.
    ...figures.shortOfSteady.map((note) => `bytes a row short of steady ingest, as the measurement says: ${note}`),
  ]
  // New pages a row adds to the table and its indexes: written back once a checkpoint cycle.
  const growthBytesPerRow =
    figures.growthBytesPerRow ??
    (dataBytesPerRow === null ? figures.bytesPerRow / 3 : dataBytesPerRow + 28 + 0.5 * figures.bytesPerRow)
  if (figures.growthBytesPerRow === null)
    assumptions.push(
      "data-file growth per row estimated from the row's data and its WAL (a prediction gives it exactly)",
    )
  const flushesPerRow = 1 / (rowsPerCommit * commitsPerFlush)
  const storageLimits = {
    'write bandwidth': (storage.writeMBps * MB) / (figures.bytesPerRow + growthBytesPerRow),
    IOPS: storage.iops / (flushesPerRow + growthBytesPerRow / PAGE),
    'commit flush latency': (commitsPerFlush * rowsPerCommit * 1000) / flushMs,
  }
  // The cores run the sessions' work and a load generator's beside it. Where sessions contend inside
  // the server, the table takes their rows no faster than insertRowsPerSec: a lock held while working.
  const stations: Station[] = []
  if (transactionMs !== null) stations.push({ demandMs: transactionMs + clientMs, servers: cores ?? connections })
  if (transactionMs !== null && insertRowsPerSec !== null)
    stations.push({ demandMs: (rowsPerCommit * 1000) / insertRowsPerSec, servers: 1, heldWhileWorking: true })
  // A backend runs on one core at a time, and a load generator in a process of its own beside it:
  // the load generator's CPU binds only where the two together fill the cores, and the table only
  // where it takes rows slower than they do. Each station serves its servers / its demand.
  const cpu =
    transactionMs === null
      ? null
      : rowsPerCommit *
        1000 *
        Math.min(connections / transactionMs, ...stations.map(({ servers, demandMs }) => servers / demandMs))
  const limits: Record<LimitName, number | null> = { ...storageLimits, 'server CPU': cpu }
  // Each connection works its transaction, then waits for its flush, one flush at a time, each
  // ending when its backend has a core again, within a scheduler slice.
  stations.push({
    demandMs: flushMs / commitsPerFlush,
    servers: 1,
    coreWaitsPerTransaction: transactionMs === null ? 0 : 1 / commitsPerFlush,
  })
  const cycle = rowsPerCommit * 1000 * closedNetworkThroughput(connections, stations, coreWaitMaxMs)
  const maxRowsPerSec = Math.min(cycle, ...Object.values(storageLimits))
  // The limit that binds is the resource the ceiling keeps busiest.
  const busiest = (Object.entries(limits) as Array<[LimitName, number | null]>).map(
    ([name, limit]): [LimitName, number] => [name, limit === null ? 0 : maxRowsPerSec / limit],
  )
  const [bindingLimit] = busiest.reduce((high, entry) => (entry[1] > high[1] ? entry : high))
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
    rowsPerCommit,
    method,
    rowsPerStatement,
    statementsPerCommit,
    connections,
    cores,
    insertRowsPerSec,
    msPerRow,
    commitMs,
    clientMsPerRow,
    clientMsPerCommit,
    transactionMs,
    flushMs,
    commitsPerFlush,
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

const round = (value: number) => Number(value.toPrecision(3))
