import type { KeyOrder } from './btree.js'
import type { GinShape } from './gin.js'
import type { GistShape } from './gist.js'
import type { ColumnLayout } from './layout.js'
import type { ToastShare } from './table-sample.js'

// What a prediction is computed from, whether a table's catalog and a sample of it
// (catalog-model.ts) or a planned table's description (planned-table.ts) gave it.

export interface IndexModel {
  name: string
  method: string
  columns: ColumnLayout[]
  keyOrder: KeyOrder
  fillfactor: number
  /** Share of rows the index takes: a partial index's predicate's selectivity on a sample, 0 for BRIN, else 1. */
  share: number
  gin?: GinShape
  gist?: GistShape
  /** Where the model guessed for this index. */
  assumptions: string[]
}

/** Access methods with a record model of their own; any other is estimated as a B-tree of the same keys. */
export const MODELLED_METHODS = new Set(['btree', 'gin', 'gist', 'hash', 'brin'])

/** What the prediction is computed from, whether it came from a catalog or a description. */
export interface TableModel {
  table: string
  columns: ColumnLayout[]
  indexes: IndexModel[]
  fillfactor: number
  walLevel: string
  blockSize: number
  /** Columns filled from a sequence (serial, identity): each logs a record every 33 values. */
  sequences: number
  unlogged: boolean
  temporary: boolean
  /** A default calls a volatile function (other than nextval): COPY inserts row by row. */
  volatileDefault: boolean
  /** Values stored out of line (TOAST) a row, and their stored bytes a row, from a sample. */
  toast: ToastShare
  assumptions: string[]
}

/** A B-tree, or a method without a model of its own estimated as one. */
export const estimatedAsBtree = (method: string) => method === 'btree' || !MODELLED_METHODS.has(method)

export const brinAssumption = (name: string) =>
  `${name}: BRIN predicted 0: rows added past its last summarised range write nothing until VACUUM or brin_summarize_new_values summarises them; rows landing in a summarised range (the last, partial one after CREATE INDEX) update its summary`
