import type { Session } from '../driver/types.js'
import { WalcostError } from '../errors.js'
import { seededRandom } from '../random.js'
import type { Column, Table } from './catalog.js'
import { quoteIdent } from './catalog.js'
import { toPgText } from './encode.js'

/** Where generated values start, read from the table so unique columns do not collide. */
export interface SyntheticStart {
  /** Per unique column: the value after which generated values continue (max of the column). */
  after: Record<string, string | null>
  /** Base timestamp (ms since epoch) of generated timestamps, which ascend like a time series. */
  epochMs: number
  /**
   * Position of the first row in the series: consecutive batches continue the keys (unique values
   * and timestamps) where the previous one stopped, as consecutive production batches would.
   */
  firstRow: number
  /** Per foreign key: keys that exist in the parent table, as text, to reference (a bounded sample). */
  parentKeys: Record<string, Array<Array<string | null>>>
}

type ValueFactory = (index: number, random: () => number) => string | null

const INTEGER_TYPES = new Set(['int2', 'int4', 'int8', 'oid'])
const FLOAT_TYPES = new Set(['float4', 'float8'])
const TEXT_TYPES = new Set(['text', 'varchar', 'bpchar', 'name', 'citext'])
const TIME_TYPES = new Set(['timestamptz', 'timestamp'])
const ORDERED_TYPES = new Set([...INTEGER_TYPES, 'numeric', ...TIME_TYPES, 'date'])
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
/** How many distinct parent keys a foreign key's values are drawn from. */
const PARENT_KEYS = 10_000
/** Elements of a generated array value. */
const ARRAY_LENGTH = 3

/** The columns `count` fills: those the server does not fill itself (defaults, identity, generated). */
export function syntheticColumns(table: Table): Column[] {
  return table.columns.filter((column) => !column.serverFilled)
}

/** Reads where unique columns end today and the server's clock, before the measured window. */
export async function readSyntheticStart(session: Session, table: Table): Promise<SyntheticStart> {
  const after: Record<string, string | null> = {}
  for (const column of syntheticColumns(table)) {
    if (!column.unique || !ORDERED_TYPES.has(column.typeName)) continue
    const [row] = await session.query<{ max: string | null }>(
      `select max(${quoteIdent(column.name)})::text as max from ${table.quoted}`,
    )
    after[column.name] = row?.max ?? null
  }
  const [clock] = await session.query<{ ms: string }>(
    `select floor(extract(epoch from date_trunc('second', now())) * 1000)::text as ms`,
  )
  const parentKeys: SyntheticStart['parentKeys'] = {}
  for (const key of table.foreignKeys) {
    const list = key.parentColumns.map(quoteIdent).join(', ')
    const rows = await session.query<{ key: Array<string | null> }>(
      `select array[${key.parentColumns.map((column) => `${quoteIdent(column)}::text`).join(', ')}] as key
         from (select distinct ${list} from ${key.parent} limit ${PARENT_KEYS}) parent_keys`,
    )
    parentKeys[key.name] = rows.map((row) => row.key)
  }
  return { after, epochMs: Number(clock?.ms ?? Date.now()), firstRow: 0, parentKeys }
}

function textLength(column: Column): number {
  const declared = /\((\d+)\)$/.exec(column.type)
  // pg_stats' avg_width includes the 1-byte short varlena header.
  const wanted = column.avgWidth !== null ? Math.max(1, column.avgWidth - 1) : 16
  return declared ? Math.min(wanted, Number(declared[1])) : wanted
}

function factoryFor(column: Column, start: SyntheticStart, seed: number): ValueFactory | undefined {
  const after = start.after[column.name]
  const type = column.typeName
  if (INTEGER_TYPES.has(type) || type === 'numeric') {
    if (column.unique) {
      const base = after === null || after === undefined ? 0n : BigInt(after.split('.')[0] ?? '0')
      return (index) => (base + 1n + BigInt(index)).toString()
    }
    const range = type === 'int2' ? 1_000 : 10_000
    return type === 'numeric'
      ? (_, random) => (random() * 1_000_000).toFixed(2)
      : (_, random) => String(Math.floor(random() * range))
  }
  if (FLOAT_TYPES.has(type)) return (_, random) => String(random() * 1_000)
  if (type === 'bool') return (_, random) => (random() < 0.5 ? 't' : 'f')
  if (TEXT_TYPES.has(type)) {
    const length = textLength(column)
    return (index, random) => {
      let text = column.unique ? `wc${seed}-${index}-` : ''
      while (text.length < length) text += ALPHABET[Math.floor(random() * ALPHABET.length)]
      return column.unique ? text : text.slice(0, length)
    }
  }
  if (TIME_TYPES.has(type)) {
    const base = after ? Date.parse(after.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')) : start.epochMs
    const origin = Number.isFinite(base) ? base : start.epochMs
    return (index) => new Date(origin + 1 + index).toISOString()
  }
  if (type === 'date') {
    const origin = after ? Date.parse(`${after}T00:00:00Z`) : start.epochMs
    const day = 86_400_000
    return column.unique
      ? (index) => new Date(origin + day * (index + 1)).toISOString().slice(0, 10)
      : (index) => new Date(origin + day * Math.floor(index / 10_000)).toISOString().slice(0, 10)
  }
  if (type === 'uuid') {
    return (index, random) => {
      const hex = Array.from({ length: 24 }, () => Math.floor(random() * 16).toString(16)).join('')
      const serial = index.toString(16).padStart(8, '0').slice(-8)
      return `${serial}-${hex.slice(0, 4)}-4${hex.slice(4, 7)}-a${hex.slice(7, 10)}-${hex.slice(10, 22)}`
    }
  }
  if (type === 'json' || type === 'jsonb')
    return (index, random) => JSON.stringify({ n: index, v: Math.floor(random() * 1_000) })
  if (type === 'bytea')
    return (_, random) =>
      `\\x${Array.from({ length: 16 }, () =>
        Math.floor(random() * 256)
          .toString(16)
          .padStart(2, '0'),
      ).join('')}`
  if (type === 'interval') return (index) => `${index} seconds`
  // An array: a few elements of its element type (pg_type names arrays '_' + the element's name).
  if (type.startsWith('_')) {
    const element = factoryFor({ ...column, typeName: type.slice(1), unique: false }, start, seed)
    if (!element) return undefined
    return (index, random) =>
      toPgText(
        Array.from({ length: ARRAY_LENGTH }, () => element(index, random)),
        column,
      )
  }
  return undefined
}

/**
 * `count` rows generated from the column types: the same seed and start give the same rows.
 * Unique columns ascend past the table's current maximum; timestamps ascend from the server's clock.
 */
export function* syntheticRows(
  table: Table,
  count: number,
  seed: number,
  start: SyntheticStart,
): Generator<Array<string | null>> {
  const columns = syntheticColumns(table)
  const referencing = new Set(table.foreignKeys.flatMap((key) => key.columns))
  const factories = columns.map((column): ValueFactory => {
    // Filled from the parent's keys below.
    if (referencing.has(column.name)) return () => null
    const factory = factoryFor(column, start, seed)
    if (factory) return factory
    if (!column.notNull) return () => null
    throw new WalcostError(
      'UNSUPPORTED_COLUMN_TYPE',
      `count cannot generate values for column ${column.name} (${column.type}), which is NOT NULL without a default. Give the batch as rows or sql instead, or give the column a default.`,
      { field: 'count' },
    )
  })
  // A foreign key's columns take one existing parent key together, drawn anew for each row.
  const references = table.foreignKeys.map((key) => {
    const keys = start.parentKeys[key.name] ?? []
    const positions = key.columns.map((name) => columns.findIndex((column) => column.name === name))
    const required = positions.some((position) => position >= 0 && columns[position]?.notNull)
    if (keys.length === 0 && required) {
      throw new WalcostError(
        'UNSUPPORTED_TABLE',
        `count cannot fill the foreign key ${key.name}: its parent ${key.parent} has no rows to reference. Fill the parent first (in setup), or give the batch as rows or sql.`,
        { field: 'count' },
      )
    }
    return { keys, positions }
  })
  const random = seededRandom(seed)
  for (let index = start.firstRow; index < start.firstRow + count; index++) {
    const row = factories.map((factory) => factory(index, random))
    for (const { keys, positions } of references) {
      const key = keys.length > 0 ? keys[Math.floor(random() * keys.length)] : undefined
      positions.forEach((position, i) => {
        if (position >= 0) row[position] = key?.[i] ?? null
      })
    }
    yield row
  }
}
