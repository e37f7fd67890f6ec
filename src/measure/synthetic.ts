import { WalcostError } from '../core/errors.js'
import { seededRandom } from '../core/random.js'
import type { Session } from '../driver/types.js'
import type { Column, Table } from './catalog.js'
import { quoteIdent, relationPages } from './catalog.js'
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
  /**
   * Real rows of the table, as text, in the order of syntheticColumns: generated rows take their
   * other columns from one of them, so they have the table's NULLs, widths (TOASTed values
   * included), value frequencies, arrays and documents. Empty for an empty table.
   */
  sample: Array<Array<string | null>>
}

/** How `count` rows were made: reported with the measurement, so a reader knows what was inserted. */
export interface SyntheticOrigin {
  /** Seed of the choice of sampled rows and of generated values. */
  seed: number
  /** Unique keys (text, uuid) drawn for this call alone (no seed was given), or repeated by the seed. */
  keys: 'fresh' | 'seeded'
  /** Real rows the values were drawn from (0: an empty table, every value generated from its type). */
  sampledRows: number
  /** Columns whose values are a sampled row's, whole rows at a time. */
  fromSample: string[]
  /** Columns given new values: unique ones past the current maximum, ascending times, or all where nothing was sampled. */
  generated: string[]
  /** Columns filled with keys drawn from their foreign key's parent. */
  fromParentKeys: string[]
}

/** A column's value in the index-th row; `real` is the sampled row it is drawn from, if any. */
type ValueFactory = (index: number, random: () => number, real?: Array<string | null>) => string | null

export const INTEGER_TYPES = new Set(['int2', 'int4', 'int8', 'oid'])
const FLOAT_TYPES = new Set(['float4', 'float8'])
export const TEXT_TYPES = new Set(['text', 'varchar', 'bpchar', 'name', 'citext'])
export const TIME_TYPES = new Set(['timestamptz', 'timestamp'])
const ORDERED_TYPES = new Set([...INTEGER_TYPES, 'numeric', ...TIME_TYPES, 'date'])
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789'
/** How many distinct parent keys a foreign key's values are drawn from. */
const PARENT_KEYS = 10_000
/** Elements of a generated array value. */
const ARRAY_LENGTH = 3
/** Real rows `count` draws its values from, and how many rows' worth of pages the sample reads. */
const SAMPLE_ROWS = 1_000
const SAMPLE_SCAN_ROWS = 5_000
/** Pages the sample reads first; it reads more until they hold SAMPLE_SCAN_ROWS rows. */
const FIRST_SAMPLE_PAGES = 64
/** A time column this correlated with the physical order ascends as rows arrive: new rows get new times. */
const ASCENDING_CORRELATION = 0.9
/** The last pages an ascending column's newest value is read from. */
const NEWEST_PAGES = 128

/** The columns `count` fills: those the server does not fill itself (defaults, identity, generated). */
export function syntheticColumns(table: Table): Column[] {
  return table.columns.filter((column) => !column.serverFilled)
}

/**
 * Reads where unique and ascending columns end today, the server's clock, the parents' keys and
 * the sample, before the measured window. Everything is read from the table's contents, never from
 * its statistics (pg_class.reltuples, pg_stats), so the same seed and the same contents give the
 * same rows after an ANALYZE or a new index.
 */
export async function readSyntheticStart(session: Session, table: Table): Promise<SyntheticStart> {
  const pages = await relationPages(session, table)
  const sample = await readSample(session, table, pages)
  const after: Record<string, string | null> = {}
  for (const [position, column] of syntheticColumns(table).entries()) {
    if (column.unique && ORDERED_TYPES.has(column.typeName)) {
      const [row] = await session.query<{ max: string | null }>(
        `select max(${quoteIdent(column.name)})::text as max from ${table.quoted}`,
      )
      after[column.name] = row?.max ?? null
    } else if (TIME_TYPES.has(column.typeName) && ascends(sample, position)) {
      // Its newest values are on the last pages: a TID range scan reads only those.
      const [row] = await session.query<{ max: string | null }>(
        `select max(${quoteIdent(column.name)})::text as max from ${table.quoted} where ctid >= $1::tid`,
        [`(${Math.max(0, pages - NEWEST_PAGES)},0)`],
      )
      after[column.name] = row?.max ?? null
    }
  }
  const [clock] = await session.query<{ ms: string }>(
    `select floor(extract(epoch from date_trunc('second', now())) * 1000)::text as ms`,
  )
  const parentKeys: SyntheticStart['parentKeys'] = {}
  for (const key of table.foreignKeys) {
    const list = key.parentColumns.map(quoteIdent).join(', ')
    // Ordered by a hash of the key: the same keys whatever plan the server picks for DISTINCT.
    const rows = await session.query<{ key: Array<string | null> }>(
      `select key from (select distinct array[${key.parentColumns.map((column) => `${quoteIdent(column)}::text`).join(', ')}] as key
                          from (select ${list} from ${key.parent}) parent) parent_keys
        order by hashtext(key::text), key limit ${PARENT_KEYS}`,
    )
    parentKeys[key.name] = rows.map((row) => row.key)
  }
  return { after, epochMs: Number(clock?.ms ?? Date.now()), firstRow: 0, parentKeys, sample }
}

/**
 * SAMPLE_ROWS real rows, from pages spread over the table (TABLESAMPLE SYSTEM, repeatable: the
 * same pages for the same share of the same pages), as text in the order of syntheticColumns. The
 * share starts at FIRST_SAMPLE_PAGES pages and grows until they hold SAMPLE_SCAN_ROWS rows (or is
 * all of them). Only the chosen rows' values are read (TOASTed ones fetched), not those of every
 * sampled page.
 */
async function readSample(session: Session, table: Table, pages: number): Promise<Array<Array<string | null>>> {
  const columns = syntheticColumns(table)
  if (columns.length === 0) return []
  let percent = pages > FIRST_SAMPLE_PAGES ? (100 * FIRST_SAMPLE_PAGES) / pages : 100
  while (percent < 100) {
    const [found] = await session.query<{ rows: string }>(
      `select count(*)::text as rows from ${table.quoted} tablesample system ($1) repeatable (0)`,
      [percent],
    )
    const rows = Number(found?.rows ?? 0)
    if (rows >= SAMPLE_SCAN_ROWS) break
    percent = Math.min(100, percent * (rows > 0 ? Math.max(2, (1.25 * SAMPLE_SCAN_ROWS) / rows) : 8))
  }
  const rows = await session.query<{ row: Array<string | null> }>(
    `select array[${columns.map((column) => `${quoteIdent(column.name)}::text`).join(', ')}] as row
       from ${table.quoted}
      where ctid = any (array(select ctid from ${table.quoted} tablesample system ($1) repeatable (0)
                               order by hashtext(ctid::text) limit ${SAMPLE_ROWS}))
      order by ctid`,
    [percent],
  )
  return rows.map((entry) => entry.row)
}

/** A time value as PostgreSQL prints it, in milliseconds; NaN when it is not one (infinity, BC). */
const parseTime = (text: string) => Date.parse(text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))

/**
 * Whether a time column ascends with the physical order: the correlation, over the sample in
 * physical order, of each row's position and its value's rank (pg_stats.correlation's measure,
 * from the rows themselves rather than from the last ANALYZE).
 */
function ascends(sample: Array<Array<string | null>>, position: number): boolean {
  const times = sample.map((row) => parseTime(row[position] ?? '')).filter((time) => Number.isFinite(time))
  if (times.length < 2) return false
  const order = times.map((time, at) => ({ time, at })).sort((a, b) => a.time - b.time)
  const ranks = new Array<number>(times.length)
  for (let first = 0; first < order.length; ) {
    let last = first
    while (last + 1 < order.length && order[last + 1]?.time === order[first]?.time) last++
    // Ties share their mean rank: a column of one value does not ascend.
    for (let i = first; i <= last; i++) ranks[order[i]?.at ?? 0] = (first + last) / 2
    first = last + 1
  }
  return (
    correlation(
      ranks.map((_, at) => at),
      ranks,
    ) > ASCENDING_CORRELATION
  )
}

/** Pearson's correlation of two series; 0 when either is constant. */
function correlation(xs: number[], ys: number[]): number {
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
  const [mx, my] = [mean(xs), mean(ys)]
  let [sxy, sxx, syy] = [0, 0, 0]
  xs.forEach((x, i) => {
    const y = ys[i] ?? my
    sxy += (x - mx) * (y - my)
    sxx += (x - mx) ** 2
    syy += (y - my) ** 2
  })
  return sxx > 0 && syy > 0 ? sxy / Math.sqrt(sxx * syy) : 0
}

/** Whether a column's values are a sampled row's, rather than generated, when there is a sample. */
function sampled(column: Column, position: number, sample: Array<Array<string | null>>): boolean {
  if (column.unique) return false
  return !(TIME_TYPES.has(column.typeName) && ascends(sample, position))
}

/** How syntheticRows makes the table's rows, for the measurement's report. */
export function syntheticOrigin(table: Table, seed: number, start: SyntheticStart, freshKeys = false): SyntheticOrigin {
  const referencing = new Set(table.foreignKeys.flatMap((key) => key.columns))
  const columns = syntheticColumns(table).filter((column) => !referencing.has(column.name))
  const positions = syntheticColumns(table)
  const fromSample =
    start.sample.length > 0 ? columns.filter((column) => sampled(column, positions.indexOf(column), start.sample)) : []
  return {
    seed,
    keys: freshKeys ? 'fresh' : 'seeded',
    sampledRows: start.sample.length,
    fromSample: fromSample.map((column) => column.name),
    generated: columns.filter((column) => !fromSample.includes(column)).map((column) => column.name),
    fromParentKeys: syntheticColumns(table)
      .filter((column) => referencing.has(column.name))
      .map((column) => column.name),
  }
}

/** A key seed as six base-36 digits: the same width for every seed, so keys are as wide on every call. */
const keyTag = (keySeed: number) => (keySeed >>> 0).toString(36).padStart(6, '0').slice(-6)

/** Generated text as long as the sampled values of the column are on average (16 without any), within its declared length. */
function textLength(column: Column, values: Array<string | null>): number {
  const declared = /\((\d+)\)$/.exec(column.type)
  const present = values.filter((value): value is string => value !== null)
  const wanted =
    present.length > 0
      ? Math.max(1, Math.round(present.reduce((sum, value) => sum + Buffer.byteLength(value), 0) / present.length))
      : 16
  return declared ? Math.min(wanted, Number(declared[1])) : wanted
}

/** `values`: the column's sampled values, which generated text takes its length from. */
function factoryFor(
  column: Column,
  start: SyntheticStart,
  keySeed: number,
  values: Array<string | null>,
): ValueFactory | undefined {
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
    const length = textLength(column, values)
    return (index, random) => {
      let text = column.unique ? `wc${keyTag(keySeed)}-${index}-` : ''
      while (text.length < length) text += ALPHABET[Math.floor(random() * ALPHABET.length)]
      return column.unique ? text : text.slice(0, length)
    }
  }
  if (TIME_TYPES.has(type)) {
    const base = after ? parseTime(after) : start.epochMs
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
    // Unique ones draw from the keys' own sequence; the serial prefix keeps their order that of the rows.
    const keyRandom = column.unique ? seededRandom(keySeed) : undefined
    return (index, valueRandom) => {
      const random = keyRandom ?? valueRandom
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
    // The sampled values are whole arrays: not the elements' length.
    const element = factoryFor({ ...column, typeName: type.slice(1), unique: false }, start, keySeed, [])
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
 * `count` rows like the table's own: each takes a random sampled row's values, with new values in
 * its unique columns (past the table's current maximum) and ascending time columns, and existing
 * parent keys in its foreign keys. Without a sample (an empty table) every value is generated from
 * its column's type. The same seed and start give the same values; unique keys come from
 * `keySeed` (the seed, unless the call draws fresh keys).
 */
export function* syntheticRows(
  table: Table,
  count: number,
  seed: number,
  start: SyntheticStart,
  keySeed = seed,
): Generator<Array<string | null>> {
  const columns = syntheticColumns(table)
  const referencing = new Set(table.foreignKeys.flatMap((key) => key.columns))
  const fromSample = new Set(syntheticOrigin(table, seed, start).fromSample)
  const factories = columns.map((column, position): ValueFactory => {
    // Filled from the parent's keys below.
    if (referencing.has(column.name)) return () => null
    if (fromSample.has(column.name)) return (_, __, row) => row?.[position] ?? null
    const factory = factoryFor(
      column,
      start,
      keySeed,
      start.sample.map((row) => row[position] ?? null),
    )
    if (factory) return factory
    if (!column.notNull) return () => null
    throw new WalcostError(
      'UNSUPPORTED_COLUMN_TYPE',
      `count cannot generate values for column ${column.name} (${column.type}), which is NOT NULL without a default, and ${table.quoted} has no rows to take values from. Give the batch as rows or sql instead, or give the column a default.`,
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
  const { sample } = start
  for (let index = start.firstRow; index < start.firstRow + count; index++) {
    const real = sample.length > 0 ? sample[Math.floor(random() * sample.length)] : undefined
    const row = factories.map((factory) => factory(index, random, real))
    for (const { keys, positions } of references) {
      const key = keys.length > 0 ? keys[Math.floor(random() * keys.length)] : undefined
      positions.forEach((position, i) => {
        if (position >= 0) row[position] = key?.[i] ?? null
      })
    }
    yield row
  }
}
