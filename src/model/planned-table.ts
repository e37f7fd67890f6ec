import { z } from 'zod'
import { DEFAULT_KEY_ORDER, DEFAULT_PLANNED_ROWS, DEFAULT_PLANNED_TABLE } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { integer } from '../core/format.js'
import {
  BLOCK_SIZE,
  BTREE_DEFAULT_FILLFACTOR,
  DEFAULT_WAL_LEVEL,
  DEFAULT_WORK_MEM,
  GIN_DEFAULT_PENDING_LIST_LIMIT,
  HASH_DEFAULT_FILLFACTOR,
  HEAP_DEFAULT_FILLFACTOR,
} from '../core/units.js'
import { KEY_ORDERS } from './btree.js'
import { plannedEntryTuple, plannedGinPostings } from './gin-planned.js'
import { type ColumnLayout, heapRowsPerPage, heapTupleSizes } from './layout.js'
import { brinAssumption, type IndexModel, type TableModel } from './table-model.js'
import { typeLayout } from './types.js'

// A table that does not exist yet, as its description gives it: the schema it is checked by, and
// the model the prediction is computed from.

const keyOrderSchema = z.enum(KEY_ORDERS)

const plannedColumnSchema = z.strictObject({
  name: z.string().min(1),
  type: z.string().min(1).describe('SQL type name: bigint, text, numeric(12,2), timestamptz, uuid, ...'),
  nullable: z.boolean().default(false),
  nullFraction: z.number().min(0).max(1).optional().describe('share of NULLs (default 0, or 0.1 when nullable)'),
  avgWidth: z
    .number()
    .positive()
    .optional()
    .describe('average stored width of a value, header included (varlena types)'),
  identity: z.boolean().default(false).describe('filled from a sequence (identity; serial types count by themselves)'),
})

const plannedGinKeysSchema = z.strictObject({
  perRow: z
    .number()
    .positive()
    .describe("entries of this kind a row: a jsonb document's keys or its values, an array's elements"),
  distinct: z
    .union([z.number().int().positive(), z.literal('each row')])
    .describe(
      "distinct keys of this kind in the table, or 'each row' for a value new in every row (an id, a reference)",
    ),
  keyBytes: z
    .number()
    .positive()
    .default(8)
    .describe(
      "a key's bytes: for jsonb_ops a key's or string value's text and 2 (10 past 125 bytes), for jsonb_path_ops 4, for an array its element's width",
    ),
})

const PLANNED_METHODS = ['btree', 'hash', 'gist', 'gin', 'brin'] as const

const plannedIndexSchema = z
  .strictObject({
    name: z.string().min(1),
    method: z.enum(PLANNED_METHODS).default('btree').describe('the access method: btree, hash, gist, gin or brin'),
    columns: z.array(z.string().min(1)).min(1),
    include: z.array(z.string().min(1)).default([]),
    keyOrder: keyOrderSchema
      .optional()
      .describe(
        'B-tree: how new keys arrive: ascending (time, a sequence), grouped-ascending (few groups, ascending within each), interleaved (many small groups), random (uuid), or duplicate-keys (few distinct keys: deduplication instead of splits); default ascending when the leading column is an identity or serial column, else random',
      ),
    fillfactor: z
      .number()
      .int()
      .min(10)
      .max(100)
      .optional()
      .describe(
        `B-tree and hash: default ${BTREE_DEFAULT_FILLFACTOR} for a B-tree, ${HASH_DEFAULT_FILLFACTOR} for hash`,
      ),
    keys: z
      .array(plannedGinKeysSchema)
      .min(1)
      .optional()
      .describe("GIN: its entries, kind by kind (a GIN index's WAL depends on how many rows share each key)"),
    fastupdate: z
      .boolean()
      .default(true)
      .describe('GIN: a pending list (the default), or entries straight into the tree'),
    pendingListLimit: z
      .number()
      .int()
      .min(64)
      .default(GIN_DEFAULT_PENDING_LIST_LIMIT / 1024)
      .describe('GIN: gin_pending_list_limit in kB'),
  })
  .superRefine((index, context) => {
    if (index.method === 'gin' && !index.keys)
      context.addIssue({
        code: 'custom',
        path: ['keys'],
        message: `${index.name} is a GIN index: give its keys, e.g. keys: [{ perRow: 5, distinct: 5, keyBytes: 8 }, { perRow: 1, distinct: 'each row', keyBytes: 34 }] for a document's 5 keys and an id of its own`,
      })
    if (index.method !== 'gin' && index.keys)
      context.addIssue({ code: 'custom', path: ['keys'], message: 'keys are for a GIN index (method: gin)' })
    for (const [k, kind] of (index.keys ?? []).entries()) {
      if (kind.distinct !== 'each row' && kind.perRow > kind.distinct)
        context.addIssue({
          code: 'custom',
          path: ['keys', k, 'perRow'],
          message: `a row holds a key once: perRow ${kind.perRow} is more than its ${kind.distinct} distinct keys`,
        })
    }
  })

/** A table that does not exist yet: its columns and indexes. */
export const tableDescriptionSchema = z.strictObject({
  name: z.string().default(DEFAULT_PLANNED_TABLE),
  columns: z.array(plannedColumnSchema).min(1),
  indexes: z.array(plannedIndexSchema).default([]),
  fillfactor: z.number().int().min(10).max(100).default(HEAP_DEFAULT_FILLFACTOR),
  walLevel: z.enum(['minimal', 'replica', 'logical']).default(DEFAULT_WAL_LEVEL),
  rows: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_PLANNED_ROWS)
    .describe("rows in the table when these are added: a GIN key's posting list holds the rows that share it"),
  unlogged: z.boolean().default(false).describe('an UNLOGGED table: its rows and indexes write no WAL'),
})

export type TableDescription = z.input<typeof tableDescriptionSchema>

/** Column types a GiST operator class stores as another (point_ops: a box). */
const GIST_STORED_TYPES: Record<string, string> = { point: 'box' }

/** The model of a planned table, from its description alone. */
export function modelFromDescription(description: z.output<typeof tableDescriptionSchema>): TableModel {
  const assumptions: string[] = []
  const columns = description.columns.map((column): ColumnLayout => {
    const layout = typeLayout(column.type)
    if (!layout) {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `description.columns: unknown type ${column.type} for ${column.name}; use a built-in type name, or give a similar one with its avgWidth.`,
        { field: 'description.columns' },
      )
    }
    if (layout.length < 0 && column.avgWidth === undefined)
      assumptions.push(`${column.name} (${column.type}): assumed ${layout.width} bytes a value; give avgWidth`)
    return {
      name: column.name,
      length: layout.length,
      align: layout.align,
      avgWidth: column.avgWidth ?? layout.width,
      nullFraction: column.nullFraction ?? (column.nullable ? 0.1 : 0),
    }
  })
  const byName = new Map(columns.map((column) => [column.name, column]))
  const typeOf = new Map(description.columns.map((column) => [column.name, column.type.trim().toLowerCase()]))
  const sequenced = new Set(
    description.columns
      .filter((column) => /serial$/i.test(column.type.trim()) || column.identity)
      .map((column) => column.name),
  )
  const rowsPerPage = heapRowsPerPage(BLOCK_SIZE, description.fillfactor, heapTupleSizes(columns).onPage)
  const indexes = description.indexes.map((index): IndexModel => {
    const indexColumns = [...index.columns, ...index.include].map((name) => {
      const column = byName.get(name)
      if (!column)
        throw new WalcostError(
          'INVALID_OPTIONS',
          `description.indexes: ${index.name} names ${name}, which is not a column.`,
          { field: 'description.indexes' },
        )
      // A GiST leaf stores its operator class's key type: a point as a box.
      const stored = index.method === 'gist' ? GIST_STORED_TYPES[typeOf.get(name) ?? ''] : undefined
      const layout = stored ? typeLayout(stored) : undefined
      return layout ? { ...column, length: layout.length, align: layout.align, avgWidth: layout.width } : column
    })
    const own: string[] = []
    if (index.method === 'brin') own.push(brinAssumption(index.name))
    const gin =
      index.method === 'gin' && index.keys
        ? {
            entriesPerRow: index.keys.reduce((sum, kind) => sum + kind.perRow, 0),
            entryBytesPerRow: index.keys.reduce((sum, kind) => sum + kind.perRow * plannedEntryTuple(kind), 0),
            fastupdate: index.fastupdate,
            pendingLimitBytes: index.pendingListLimit * 1024,
            mergeMemoryBytes: DEFAULT_WORK_MEM,
            unsampled: [],
            postings: plannedGinPostings(index.keys, description.rows, rowsPerPage),
          }
        : undefined
    if (gin)
      own.push(
        `${index.name}: GIN from its keys as described, for a table of ${integer(description.rows)} rows (work_mem taken as PostgreSQL's default, ${integer(DEFAULT_WORK_MEM / 1024)} kB)`,
      )
    return {
      name: index.name,
      method: index.method,
      // A sequence hands out ascending values: an index it leads takes each new key at its right end.
      keyOrder: index.keyOrder ?? (sequenced.has(index.columns[0] ?? '') ? 'ascending' : DEFAULT_KEY_ORDER),
      fillfactor: index.fillfactor ?? (index.method === 'hash' ? HASH_DEFAULT_FILLFACTOR : BTREE_DEFAULT_FILLFACTOR),
      share: index.method === 'brin' ? 0 : 1,
      ...(gin && { gin }),
      assumptions: own,
      columns: indexColumns,
    }
  })
  assumptions.push(...indexes.flatMap((index) => index.assumptions))
  const sequences = sequenced.size
  return {
    table: description.name,
    columns,
    indexes,
    fillfactor: description.fillfactor,
    walLevel: description.walLevel,
    blockSize: BLOCK_SIZE,
    sequences,
    unlogged: description.unlogged,
    temporary: false,
    volatileDefault: false,
    toast: { valuesPerRow: 0, bytesPerRow: 0 },
    assumptions,
  }
}
