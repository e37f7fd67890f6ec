import { z } from 'zod'
import { DEFAULT_METHOD } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { batchOptionsSchema, connectionOptionsSchema, parseOptions } from '../core/options.js'
import { XLOG_SHORT_PAGE_HEADER } from '../core/units.js'
import { onDatabase } from '../measure/lifecycle.js'
import type { InsertCost } from '../measure/result.js'
import { type KeyOrder, predictBtree } from './btree.js'
import { modelFromCatalog } from './catalog-model.js'
import { predictGin } from './gin.js'
import { predictGist } from './gist.js'
import { predictHash } from './hash.js'
import {
  type HeapTupleSizes,
  heapRowsPerPage,
  heapTupleSizes,
  indexTupleSize,
  logicalRowBytes,
  maxAlign,
  shortAlign,
} from './layout.js'
import type { MethodPrediction } from './method-prediction.js'
import { modelFromDescription, tableDescriptionSchema } from './planned-table.js'
import { estimatedAsBtree, type IndexModel, type TableModel } from './table-model.js'

/**
 * Options of {@link predictInsertCost}: a table on a database (read from the catalog, nothing is
 * written), or a description of a table that does not exist yet.
 *
 * @example
 * const options: PredictOptions = { description: { columns: [{ name: 'id', type: 'bigint' }], indexes: [{ name: 'pk', columns: ['id'], keyOrder: 'ascending' }] } }
 */
export const predictOptionsSchema = connectionOptionsSchema
  .extend({
    setup: batchOptionsSchema.shape.setup,
    table: z.string().trim().min(1).optional().describe("the table to predict for, as '...'::regclass reads it"),
    description: tableDescriptionSchema.optional(),
    method: z
      .enum(['insert', 'multirow', 'copy'])
      .default(DEFAULT_METHOD)
      .describe('how rows are sent: one INSERT per row, multi-row INSERTs, or COPY'),
    rowsPerCommit: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('rows per transaction, for the commit records (default: one large transaction)'),
  })
  .superRefine((options, context) => {
    if ((options.table === undefined) === (options.description === undefined)) {
      context.addIssue({
        code: 'custom',
        path: ['table'],
        message: 'give either a table to read from the database, or a description of a planned table',
      })
    }
  })

export type PredictOptions = z.input<typeof predictOptionsSchema>

export interface IndexPrediction {
  name: string
  /** Record bytes per row (leaf inserts and their share of splits), images excluded. */
  bytesPerRow: number
  /** Page images the index logs by design, whatever the checkpoints (a hash bucket split's new page, both halves of a GIN split), bytes per row. */
  imageBytesPerRow: number
  recordsPerRow: number
  /** Size of one index tuple on a leaf page. */
  tupleSize: number
  splitsPerRow: number
  /** How new keys arrive, for a B-tree (and methods estimated as one); null for GIN, GiST, hash and BRIN. */
  keyOrder: KeyOrder | null
  /** true for B-tree, whose records are modelled exactly; GIN, GiST and hash have record models with stated assumptions. */
  exact: boolean
  /** Share of rows the index takes (a partial index's predicate on a sample of the table; 0 for BRIN, which writes on summarising; else 1). */
  share: number
  /** Where the model guessed for this index; also in the prediction's assumptions. */
  assumptions: string[]
}

/** A predicted InsertCost, per row, in the measured result's shape (no images: steady state). */
export interface InsertCostPrediction {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'prediction'
  table: string
  method: 'insert' | 'multirow' | 'copy'
  rowsPerCommit: number | null
  /** WAL per row including record alignment and WAL page headers, as a measurement's bytesPerRow. */
  bytesPerRow: number
  recordsPerRow: number
  logicalBytesPerRow: number
  amplification: number
  tuple: { tupleLength: number; onPage: number }
  /** Per row: heap and index record bytes, the images an index logs by design (hash and GIN splits), the rest (alignment, page headers, commits). */
  breakdown: { heapBytes: number; indexBytes: number; fpiBytes: number; otherBytes: number }
  heap: { bytesPerRow: number; recordsPerRow: number }
  indexes: IndexPrediction[]
  /** Where the model guessed: missing statistics, key order, other access methods. */
  assumptions: string[]
}

// COPY buffers this many tuples (or bytes of them) before heap_multi_insert (copyfrom.c).
const COPY_BUFFERED_TUPLES = 1000
const COPY_BUFFERED_BYTES = 65_535

/** predictInsertCost without the notebook display; the exported entry point is in api.ts. */
export async function predictInsertCost(options: PredictOptions): Promise<InsertCostPrediction> {
  const parsed = parseOptions(predictOptionsSchema, options)
  const model = parsed.description
    ? modelFromDescription(parsed.description)
    : await onDatabase(parsed, (session) => modelFromCatalog(session, parsed.table as string), { readsWal: false })
  return predict(model, parsed.method, parsed.rowsPerCommit ?? null)
}

type PredictedIndex = IndexPrediction & { alignedPerRow: number; methodAssumptions: string[] }

function predictIndex(index: IndexModel, blockSize: number): PredictedIndex {
  const method = predictMethod(index, blockSize)
  const { share } = index
  return {
    name: index.name,
    bytesPerRow: share * method.bytesPerRow,
    alignedPerRow: share * method.alignedPerRow,
    recordsPerRow: share * method.recordsPerRow,
    tupleSize: method.tupleSize,
    splitsPerRow: share * method.splitsPerRow,
    imageBytesPerRow: share * method.imageBytesPerRow,
    keyOrder: estimatedAsBtree(index.method) ? index.keyOrder : null,
    exact: index.method === 'btree',
    share,
    assumptions: index.assumptions,
    methodAssumptions: method.assumptions,
  }
}

function predictMethod(index: IndexModel, blockSize: number): MethodPrediction {
  switch (index.method) {
    case 'gin':
      return index.gin ? predictGin(index.name, index.gin, blockSize) : predictBtree(index, blockSize)
    case 'gist':
      return predictGist(index.name, indexTupleSize(index.columns), blockSize, index.gist ?? null)
    case 'hash':
      return predictHash(index.name, index.fillfactor, blockSize)
    default:
      return predictBtree(index, blockSize)
  }
}

function predictHeap(
  model: TableModel,
  method: InsertCostPrediction['method'],
  { tupleLength, onPage, insertRecordAligned }: HeapTupleSizes,
) {
  // COPY buffers rows for heap_multi_insert only when no default is volatile (copyfrom.c).
  if (method !== 'copy' || model.volatileDefault) {
    // XLOG_HEAP_INSERT: 24 header + 20 block ref + 2 + 3 xl_heap_insert + 5 xl_heap_header + tuple after its header.
    return { bytesPerRow: tupleLength + 31, alignedPerRow: insertRecordAligned, recordsPerRow: 1 }
  }
  // XLOG_HEAP2_MULTI_INSERT: one record a page a buffer flush; a flush's first record continues
  // the previous flush's page, so it carries its tuples' offsets.
  const perPage = heapRowsPerPage(model.blockSize, model.fillfactor, onPage)
  const perFlush = Math.min(COPY_BUFFERED_TUPLES, Math.floor(COPY_BUFFERED_BYTES / tupleLength))
  const recordsPerRow = 1 / perPage + 1 / perFlush
  const overhead = 24 + 20 + 2 + 4
  const bytes = shortAlign(tupleLength - 16) + overhead * recordsPerRow + perPage / perFlush
  return { bytesPerRow: bytes, alignedPerRow: bytes + 4 * recordsPerRow, recordsPerRow }
}

function predict(
  model: TableModel,
  method: InsertCostPrediction['method'],
  rowsPerCommit: number | null,
): InsertCostPrediction {
  const tuple = heapTupleSizes(model.columns)
  // An unlogged table's rows, indexes and (15+) owned sequences write no WAL.
  const logged = model.unlogged || model.temporary ? 0 : 1
  const written = <T extends { bytesPerRow: number; alignedPerRow: number; recordsPerRow: number }>(part: T): T => ({
    ...part,
    bytesPerRow: part.bytesPerRow * logged,
    alignedPerRow: part.alignedPerRow * logged,
    recordsPerRow: part.recordsPerRow * logged,
    ...('imageBytesPerRow' in part && { imageBytesPerRow: Number(part.imageBytesPerRow) * logged }),
  })
  const heap = written(withToast(predictHeap(model, method, tuple), model.toast))
  const indexes = model.indexes.map((index) => written(predictIndex(index, model.blockSize)))
  const commit = model.walLevel === 'logical' ? 46 : 34
  const commitPerRow = rowsPerCommit === null ? 0 : maxAlign(commit) / rowsPerCommit
  // XLOG_SEQ_LOG: 24 + 20 block ref + 2 + 12 xl_seq_rec + a 41-byte sequence tuple, every 33 values.
  const sequences = model.sequences * logged
  const sequencePerRow = (sequences * maxAlign(99)) / 33
  const recordBytes = heap.bytesPerRow + indexes.reduce((sum, index) => sum + index.bytesPerRow, 0)
  const imageBytes = indexes.reduce((sum, index) => sum + index.imageBytesPerRow, 0)
  const aligned =
    heap.alignedPerRow +
    indexes.reduce((sum, index) => sum + index.alignedPerRow + index.imageBytesPerRow, 0) +
    commitPerRow +
    sequencePerRow
  const bytesPerRow = (aligned * model.blockSize) / (model.blockSize - XLOG_SHORT_PAGE_HEADER)
  const logicalBytesPerRow = logicalRowBytes(model.columns)
  const assumptions = [...model.assumptions]
  for (const index of indexes) {
    index.assumptions = [...index.assumptions, ...index.methodAssumptions]
    assumptions.push(...index.methodAssumptions)
  }
  if (rowsPerCommit === null) assumptions.push('one transaction for the whole batch: commit records not counted')
  if (model.unlogged)
    assumptions.push('unlogged: its rows, indexes and owned sequences write no WAL; a crash empties it')
  if (model.temporary) assumptions.push('temporary: its rows, indexes and owned sequences write no WAL')
  if (model.toast.valuesPerRow === 0)
    assumptions.push('no TOAST: values over ~2 kB are stored out of line and cost more')
  if (method === 'copy' && model.volatileDefault)
    assumptions.push('a default calls a volatile function, so COPY inserts row by row: one heap record a row')
  assumptions.push(
    'steady state: no images of pages changed after a checkpoint (the first change to each page after one adds one)',
    'no B-tree deduplication: indexes with many duplicate keys write DEDUP records and smaller tuples',
  )
  return {
    kind: 'prediction',
    table: model.table,
    method,
    rowsPerCommit,
    bytesPerRow,
    recordsPerRow:
      heap.recordsPerRow +
      indexes.reduce((sum, index) => sum + index.recordsPerRow, 0) +
      (rowsPerCommit === null ? 0 : 1 / rowsPerCommit) +
      sequences / 33,
    logicalBytesPerRow,
    amplification: logicalBytesPerRow > 0 ? bytesPerRow / logicalBytesPerRow : 0,
    tuple: { tupleLength: tuple.tupleLength, onPage: tuple.onPage },
    breakdown: {
      heapBytes: heap.bytesPerRow,
      indexBytes: indexes.reduce((sum, index) => sum + index.bytesPerRow, 0),
      fpiBytes: imageBytes,
      otherBytes: bytesPerRow - recordBytes - imageBytes,
    },
    heap: { bytesPerRow: heap.bytesPerRow, recordsPerRow: heap.recordsPerRow },
    indexes: indexes.map(({ alignedPerRow: _aligned, methodAssumptions: _method, ...index }) => index),
    assumptions,
  }
}

// A TOAST chunk holds at most this much of a value (TOAST_MAX_CHUNK_SIZE for 8 kB pages); its tuple
// adds a 24-byte header, chunk_id, chunk_seq and the data's 4-byte varlena header.
const TOAST_CHUNK_BYTES = 1996
const TOAST_CHUNK_OVERHEAD = 24 + 4 + 4 + 4
// The TOAST index's key (chunk_id, chunk_seq): an 8-byte header and 8 bytes of key, INSERT_LEAF 48 + 16.
const TOAST_INDEX_RECORD = 64

/**
 * The TOAST table's records, added to the heap's as a measurement counts them: per chunk of each
 * out-of-line value, a heap insert of the chunk and an entry in the TOAST index.
 */
function withToast<T extends { bytesPerRow: number; alignedPerRow: number; recordsPerRow: number }>(
  heap: T,
  toast: TableModel['toast'],
): T {
  if (toast.valuesPerRow === 0) return heap
  const valueBytes = toast.bytesPerRow / toast.valuesPerRow
  const chunks = toast.valuesPerRow * Math.ceil(valueBytes / TOAST_CHUNK_BYTES)
  // XLOG_HEAP_INSERT of a chunk: the tuple (after its 23-byte header) + 31, as for the table's rows.
  const records = toast.bytesPerRow + chunks * (TOAST_CHUNK_OVERHEAD + 31 + TOAST_INDEX_RECORD)
  return {
    ...heap,
    bytesPerRow: heap.bytesPerRow + records,
    // The chunk record's 8-byte alignment adds about half an alignment on average; the index record is aligned.
    alignedPerRow: heap.alignedPerRow + records + chunks * 4,
    recordsPerRow: heap.recordsPerRow + 2 * chunks,
  }
}

export interface PredictionComparison {
  /**
   * errorPct: (predicted - measured) / measured in percent; 0 when both are 0, and null when only the
   * prediction is (a part measured at nothing: an index the batch never touched, an unlogged table).
   */
  parts: Array<{ part: string; predicted: number; measured: number; errorPct: number | null }>
  /** Steady-state WAL per row: the measurement's bytes per row without its image bytes. */
  total: { predicted: number; measured: number; errorPct: number | null }
}

/**
 * A prediction side by side with a measurement, per part (bytes per row, images left out of the
 * measurement since the prediction is for steady state), with the error in percent.
 *
 * @example
 * const { total, parts } = comparePrediction(await predictInsertCost({ db, table }), await measureInsertCost({ db, table, count: 10_000 }))
 */
export function comparePrediction(prediction: InsertCostPrediction, measurement: InsertCost): PredictionComparison {
  if (!measurement.breakdown || measurement.rows === 0) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      "measurement: it needs rows and the split by relation (attribution 'walinspect') to be compared part by part.",
      { field: 'measurement' },
    )
  }
  const rows = measurement.rows
  const error = (predicted: number, measured: number) =>
    measured !== 0 ? (100 * (predicted - measured)) / measured : predicted === 0 ? 0 : null
  const row = (part: string, predicted: number, measured: number) => ({
    part,
    predicted,
    measured,
    errorPct: error(predicted, measured),
  })
  const parts = [
    row('heap', prediction.breakdown.heapBytes, measurement.breakdown.heapBytes / rows),
    ...prediction.indexes.map((index) => {
      const measured = measurement.indexes.find((entry) => entry.name === index.name)
      return row(
        `index ${index.name}`,
        index.bytesPerRow,
        measured ? (measured.walBytes - measured.fpiBytes) / rows : 0,
      )
    }),
    row('other', prediction.breakdown.otherBytes, measurement.breakdown.otherBytes / rows),
  ]
  const measuredTotal = (measurement.walBytes - measurement.breakdown.fpiBytes) / rows
  const predictedTotal = prediction.bytesPerRow - prediction.breakdown.fpiBytes
  return {
    parts,
    total: {
      predicted: predictedTotal,
      measured: measuredTotal,
      errorPct: error(predictedTotal, measuredTotal),
    },
  }
}
