import { z } from 'zod'
import { DEFAULT_PICK, DEFAULT_UPSERT_ACTION, DEFAULT_UPSERT_CONFLICT } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { exactlyOneOf } from '../core/options.js'
import { type Column, type Index, quoteIdent, type Table } from './catalog.js'
import { setColumnsOf } from './hot.js'
import { INTEGER_TYPES, TEXT_TYPES, TIME_TYPES } from './synthetic.js'

// The batches of writes other than inserts, written as SQL from a few numbers: which rows to update
// or delete, and how many of an upsert's keys exist already. Each is a function of (run, table), so
// it runs alike on the real table, a clone or a scratch copy.

const pickSchema = z
  .enum(['newest', 'oldest', 'random'])
  .default(DEFAULT_PICK)
  .describe(
    "Which rows: the newest (the table's last pages), the oldest, or random ones (a hash of their place: the same rows on every call for the same table).",
  )

const rowsSchema = z.number().int().min(1).max(10_000_000).describe('How many rows.')

const setSchema = z
  .record(z.string().min(1), z.string().min(1))
  .refine((set) => Object.keys(set).length > 0, 'name at least one column')

/** The write batches besides `sql`, `rows` and `count`: each option of measureWriteCost and compareWriteScenarios. */
export const writeBatchShape = {
  update: z
    .strictObject({
      rows: rowsSchema,
      set: setSchema.describe(
        "Columns and the SQL expressions they are set to, e.g. { status: \"'shipped'\", total: 'total + 1' }.",
      ),
      pick: pickSchema,
    })
    .optional()
    .describe('The batch as an UPDATE of existing rows.'),
  delete: z
    .strictObject({ rows: rowsSchema, pick: pickSchema })
    .optional()
    .describe('The batch as a DELETE of existing rows.'),
  upsert: z
    .strictObject({
      rows: rowsSchema,
      conflict: z
        .number()
        .min(0)
        .max(1)
        .default(DEFAULT_UPSERT_CONFLICT)
        .describe('Share of the rows whose key exists already (taken from existing rows); the rest get new keys.'),
      action: z
        .enum(['update', 'nothing'])
        .default(DEFAULT_UPSERT_ACTION)
        .describe('ON CONFLICT DO UPDATE or DO NOTHING.'),
      set: setSchema
        .optional()
        .describe(
          "What DO UPDATE sets, e.g. { total: 'excluded.total' }; by default every column outside the conflict key to excluded's value.",
        ),
      pick: pickSchema,
    })
    .optional()
    .describe(
      "The batch as INSERT ... ON CONFLICT on the table's primary key (or first unique index): rows shaped like existing ones, `conflict` of them with existing keys.",
    ),
}

/** A refinement: exactly one batch, whichever kind. */
export const exactlyOneWrite = exactlyOneOf(['sql', 'rows', 'count', 'run', 'update', 'delete', 'upsert'])

type WriteBatches = z.output<z.ZodObject<typeof writeBatchShape>>
type SqlOf = (run: number, target: string) => string

/** A write batch as SQL, and the columns its updates set (for the HOT analysis). */
export interface WriteSql {
  sql: string | SqlOf
  setColumns: string[]
}

/** The batch of `update`, `delete` or `upsert` as SQL of (run, table); `sql` as given; null for `rows` and `count`. */
export function writeSql(table: Table, batches: WriteBatches & { sql?: string | SqlOf | undefined }): WriteSql | null {
  const { update, delete: remove, upsert, sql } = batches
  if (update) return { sql: updateSql(update), setColumns: Object.keys(update.set) }
  if (remove) {
    return {
      sql: (run, target) => `delete from ${target} where ctid = any (array(${pickedRows(target, remove, run)}))`,
      setColumns: [],
    }
  }
  if (upsert) return upsertSql(table, upsert)
  if (sql === undefined) return null
  return { sql, setColumns: typeof sql === 'string' ? setColumnsOf(sql) : [] }
}

/** The rows a pick chooses, as a subquery of ctids: the same rows for the same table state and run. */
function pickedRows(
  target: string,
  { rows, pick }: { rows: number; pick: 'newest' | 'oldest' | 'random' },
  run: number,
): string {
  const order = pick === 'newest' ? 'ctid desc' : pick === 'oldest' ? 'ctid' : `hashtext(ctid::text || '${run + 1}')`
  return `select ctid from ${target} order by ${order} limit ${rows}`
}

function updateSql(update: NonNullable<WriteBatches['update']>): SqlOf {
  const set = assignments(update.set)
  return (run, target) => `update ${target} set ${set} where ctid = any (array(${pickedRows(target, update, run)}))`
}

const assignments = (set: Record<string, string>) =>
  Object.entries(set)
    .map(([column, expression]) => `${quoteIdent(column)} = ${expression}`)
    .join(', ')

/**
 * INSERT ... ON CONFLICT of `rows` existing rows: the first `conflict` share of them as they are
 * (their keys conflict), the rest with new values in every unique column (they insert). Values are
 * the table's own, so the rows are as wide as real ones.
 */
function upsertSql(table: Table, upsert: NonNullable<WriteBatches['upsert']>): WriteSql {
  const arbiter = conflictKey(table)
  const arbiterColumns = arbiter.columns.slice(0, arbiter.keyCount).map((attnum) => columnAt(table, attnum))
  const columns = table.columns.filter((column) => !column.generated)
  const conflicting = Math.round(upsert.rows * upsert.conflict)
  const outsideKey = columns.filter((column) => !arbiterColumns.includes(column))
  const set =
    upsert.set ??
    Object.fromEntries(
      (outsideKey.length > 0 ? outsideKey : arbiterColumns).map((column) => [
        column.name,
        `excluded.${quoteIdent(column.name)}`,
      ]),
    )
  const action = upsert.action === 'update' ? `do update set ${assignments(set)}` : 'do nothing'
  const list = columns.map((column) => quoteIdent(column.name)).join(', ')
  const override = columns.some((column) => column.identity === 'a') ? ' overriding system value' : ''
  return {
    setColumns: upsert.action === 'update' ? Object.keys(set) : [],
    sql: (run, target) => {
      const values = columns
        .map((column) =>
          column.unique
            ? `case when walcost_n <= ${conflicting} then ${quoteIdent(column.name)} else ${freshValue(column, target, run)} end`
            : quoteIdent(column.name),
        )
        .join(', ')
      return `insert into ${target} (${list})${override}
        select ${values} from (select *, row_number() over (order by ctid) as walcost_n from ${target}
                                where ctid = any (array(${pickedRows(target, upsert, run)}))) existing
        on conflict (${arbiterColumns.map((column) => quoteIdent(column.name)).join(', ')}) ${action}`
    },
  }
}

/** The primary key, or else the first unique index on plain columns without a predicate. */
function conflictKey(table: Table): Index {
  const plain = table.indexes.filter(
    (index) => index.unique && !index.columns.includes(0) && !/\bwhere\b/i.test(index.definition),
  )
  const key = plain.find((index) => index.backs === 'primary key') ?? plain[0]
  if (!key) {
    throw new WalcostError(
      'UNSUPPORTED_TABLE',
      `upsert needs a primary key or a unique index on plain columns of ${table.quoted} to conflict on; give the batch as sql instead.`,
      { field: 'upsert' },
    )
  }
  return key
}

function columnAt(table: Table, attnum: number): Column {
  const column = table.columns.find((entry) => entry.attnum === attnum)
  if (!column) throw new WalcostError('UNSUPPORTED_TABLE', `${table.quoted} has no column number ${attnum}.`)
  return column
}

/**
 * A new value for a unique column in the upsert's n-th row (`walcost_n`), past every existing one:
 * deterministic, so every run of a comparison inserts the same keys.
 */
function freshValue(column: Column, target: string, run: number): string {
  const name = quoteIdent(column.name)
  const type = column.typeName
  const nth = `md5('walcost-${run}-' || walcost_n)`
  if (INTEGER_TYPES.has(type) || type === 'numeric')
    return `(select coalesce(max(${name}), 0) from ${target}) + walcost_n`
  if (TIME_TYPES.has(type))
    return `(select coalesce(max(${name}), now()) from ${target}) + walcost_n * interval '1 millisecond'`
  if (type === 'date') return `(select coalesce(max(${name}), current_date) from ${target}) + walcost_n::int4`
  if (type === 'uuid') return `${nth}::uuid`
  // As long as the value it replaces (at least 10 characters), so index entries keep their width.
  if (TEXT_TYPES.has(type)) return `left('wc' || ${nth} || md5(${nth}), greatest(length(${name}), 10))::${column.type}`
  throw new WalcostError(
    'UNSUPPORTED_COLUMN_TYPE',
    `upsert cannot make new keys for the unique column ${column.name} (${column.type}); give the batch as sql instead.`,
    { field: 'upsert' },
  )
}
