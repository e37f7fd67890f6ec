import { COPY_CHUNK_BYTES, DEFAULT_SEED, MAX_BIND_PARAMETERS } from '../core/defaults.js'
import { causeChain, describeError, isConnectionError, throwIfAborted, WalcostError } from '../core/errors.js'
import { counted } from '../core/format.js'
import type { ParsedMeasureOptions, Row, RowSource, RowsInput } from '../core/options.js'
import { freshSeed } from '../core/random.js'
import type { Session } from '../driver/types.js'
import { type Column, quoteIdent, type Table, type TableRelation } from './catalog.js'
import { copyLine, toPgText } from './encode.js'
import {
  readSyntheticStart,
  type SyntheticOrigin,
  type SyntheticStart,
  syntheticColumns,
  syntheticOrigin,
  syntheticRows,
} from './synthetic.js'

type Values = Array<string | null>

/** A batch ready to run: the columns it fills and its rows as text values, produced lazily. */
export interface PreparedBatch {
  kind: 'sql' | 'rows' | 'count' | 'run'
  columns: Column[]
  values: () => AsyncIterable<Values>
  /** How `count` rows are made; null for other batches. */
  synthetic: SyntheticOrigin | null
}

export type BatchOptions = Pick<
  ParsedMeasureOptions,
  'sql' | 'rows' | 'count' | 'run' | 'seed' | 'method' | 'batchSize' | 'signal'
>

/** A batch that brings its own rows: given SQL, or the app's own code. */
export function givenBatch(options: Pick<BatchOptions, 'sql' | 'run'>): PreparedBatch | null {
  if (options.sql === undefined && options.run === undefined) return null
  return { kind: options.run ? 'run' : 'sql', columns: [], values: () => emptyValues(), synthetic: null }
}

/** Reads what a batch needs from the table (outside the measured window) and checks it can run. */
export async function prepareBatch(
  session: Session,
  table: Table,
  options: BatchOptions,
  start?: SyntheticStart,
): Promise<PreparedBatch> {
  const given = givenBatch(options)
  if (given) return given
  if (options.count !== undefined) {
    const count = options.count
    const columns = syntheticColumns(table)
    if (columns.length === 0) {
      throw new WalcostError(
        'UNSUPPORTED_TABLE',
        `every column of ${table.quoted} is filled by the server; insert with sql, e.g. INSERT ... DEFAULT VALUES.`,
        { field: 'count' },
      )
    }
    const synthetic = start ?? (await readSyntheticStart(session, table))
    checkBatchSize(options, columns.length)
    // Without a seed the values repeat (so measurements do) and the unique keys are this call's own.
    const seed = options.seed ?? DEFAULT_SEED
    const keySeed = options.seed ?? freshSeed()
    return {
      kind: 'count',
      columns,
      values: () => toAsync(syntheticRows(table, count, seed, synthetic, keySeed)),
      synthetic: syntheticOrigin(table, seed, synthetic, options.seed === undefined),
    }
  }
  const rows = options.rows as RowsInput
  return prepareRows(table, typeof rows === 'function' ? rows() : rows, options)
}

async function prepareRows(table: Table, source: RowSource, options: BatchOptions): Promise<PreparedBatch> {
  const iterator =
    Symbol.asyncIterator in source ? source[Symbol.asyncIterator]() : toAsync(source)[Symbol.asyncIterator]()
  const first = await iterator.next()
  if (first.done)
    throw new WalcostError('INVALID_OPTIONS', 'rows: the batch has no rows; give at least one.', { field: 'rows' })
  const columns = rowColumns(table, first.value, 0)
  checkBatchSize(options, columns.length)
  return { kind: 'rows', columns, values: () => rowValues(first.value, iterator, columns), synthetic: null }
}

/** The columns named by the first row, checked against the table. */
function rowColumns(table: Table, row: unknown, index: number): Column[] {
  if (typeof row !== 'object' || row === null || Array.isArray(row)) {
    throw new WalcostError('INVALID_ROWS', `rows[${index}]: each row must be an object keyed by column name.`, {
      field: `rows.${index}`,
    })
  }
  const byName = new Map(table.columns.map((column) => [column.name, column]))
  return Object.keys(row).map((name) => {
    const column = byName.get(name)
    if (!column) {
      throw new WalcostError(
        'INVALID_ROWS',
        `rows[${index}]: ${table.quoted} has no column ${quoteIdent(name)} (its columns: ${table.columns.map((c) => c.name).join(', ')}). Nothing was inserted.`,
        { field: `rows.${index}.${name}` },
      )
    }
    return column
  })
}

async function* rowValues(first: Row, rest: AsyncIterator<Row>, columns: Column[]): AsyncGenerator<Values> {
  const names = new Set(columns.map((column) => column.name))
  const toValues = (row: Row, index: number): Values => {
    if (typeof row !== 'object' || row === null || Array.isArray(row)) {
      throw new WalcostError('INVALID_ROWS', `rows[${index}]: each row must be an object keyed by column name.`, {
        field: `rows.${index}`,
      })
    }
    for (const key of Object.keys(row)) {
      if (!names.has(key)) {
        throw new WalcostError(
          'INVALID_ROWS',
          `rows[${index}]: column ${quoteIdent(key)} is not among the first row's columns (${[...names].join(', ')}); every row must use the first row's columns (a missing key inserts NULL). Nothing was kept.`,
          { field: `rows.${index}.${key}` },
        )
      }
    }
    return columns.map((column) => toPgText(row[column.name], column))
  }
  yield toValues(first, 0)
  for (let index = 1; ; index++) {
    const next = await rest.next()
    if (next.done) return
    yield toValues(next.value, index)
  }
}

function checkBatchSize(options: BatchOptions, columnCount: number) {
  if (options.method === 'multirow' && options.batchSize * columnCount > MAX_BIND_PARAMETERS) {
    const largest = Math.floor(MAX_BIND_PARAMETERS / columnCount)
    throw new WalcostError(
      'INVALID_OPTIONS',
      `batchSize: ${options.batchSize} rows x ${columnCount} columns exceeds PostgreSQL's ${MAX_BIND_PARAMETERS} parameters per statement; use at most ${largest}.`,
      { field: 'batchSize' },
    )
  }
}

async function* emptyValues(): AsyncGenerator<Values> {}

async function* toAsync<T>(source: Iterable<T>): AsyncGenerator<T> {
  yield* source
}

/**
 * Runs the batch inside the caller's open transaction: the xids of subtransactions it ended, which
 * are no longer held when it is done.
 */
export async function runBatch(
  session: Session,
  table: TableRelation,
  batch: PreparedBatch,
  options: BatchOptions,
  run: number,
): Promise<string[]> {
  if (batch.kind === 'run') return runAppCode(session, options)
  if (batch.kind === 'sql') {
    const sql: unknown = typeof options.sql === 'function' ? options.sql(run, table.quoted) : options.sql
    if (typeof sql !== 'string') {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `sql: the function returned ${sql instanceof Promise ? 'a Promise' : typeof sql}, not SQL text. To measure code that runs queries itself, pass it as run: (db) => ..., which walcost calls with its connection.`,
        { field: 'sql' },
      )
    }
    await session.exec(sql)
    return []
  }
  const columnList = batch.columns.map((column) => quoteIdent(column.name)).join(', ')
  const target = `${table.quoted} (${columnList})`
  if (options.method === 'copy') {
    await session.copyIn(`copy ${target} from stdin`, copyChunks(batch.values(), options.signal))
    return []
  }
  const rowsPerStatement = options.method === 'multirow' ? options.batchSize : 1
  const width = batch.columns.length
  // Values travel as text; PGlite would serialise a parameter it infers as bytea from a Uint8Array
  // only, so bytea columns read their '\x..' text through an explicit cast.
  const casts = batch.columns.map((column) => (column.typeName === 'bytea' ? '::text::bytea' : ''))
  const placeholders = (rows: number) =>
    Array.from(
      { length: rows },
      (_, row) =>
        `(${Array.from({ length: width }, (_, column) => `$${row * width + column + 1}${casts[column]}`).join(', ')})`,
    ).join(', ')
  const fullStatement = `insert into ${target} values ${placeholders(rowsPerStatement)}`
  // The next statement's rows are made while the server runs the one before, as COPY's stream
  // overlaps them: made between statements, a synthetic batch's rows (3-12 us a row here) stood in
  // the batch's time as if the server had spent it, 10-35% of a multi-row INSERT's, and timing.parts
  // took it for the rows' time. One statement at a time still: the next is sent when the last is done.
  let inFlight: Promise<unknown> = Promise.resolve()
  let pending: Values = []
  let pendingRows = 0
  const send = async () => {
    await inFlight
    throwIfAborted(options.signal)
    inFlight = session.query(
      pendingRows === rowsPerStatement ? fullStatement : `insert into ${target} values ${placeholders(pendingRows)}`,
      pending,
    )
    // Awaited before the next statement or at the end; until then its failure waits there.
    inFlight.catch(() => undefined)
    pending = []
    pendingRows = 0
  }
  for await (const values of batch.values()) {
    pending.push(...values)
    pendingRows++
    if (pendingRows === rowsPerStatement) await send()
  }
  if (pendingRows > 0) await send()
  await inFlight
  return []
}

/** Every transaction and subtransaction holds a lock on its own xid until it ends. */
export const HELD_XIDS_SQL = `coalesce((select array_agg(transactionid::text) from pg_locks
                                 where pid = pg_backend_pid() and locktype = 'transactionid'), '{}')`

/**
 * Calls the app's code with the lent connection and waits for it; from then on the connection
 * refuses the code's calls, so a query it did not await cannot outlive the rollback. The xids its
 * own transactions (savepoints) held are read before each ends: the records written under them
 * are the batch's.
 */
async function runAppCode(session: Session, options: BatchOptions): Promise<string[]> {
  const xids = new Set<string>()
  const lent = session.lend(async () => {
    const [row] = await session.query<{ xids: string[] }>(`select ${HELD_XIDS_SQL} as xids`)
    for (const xid of row?.xids ?? []) xids.add(xid)
  })
  try {
    await options.run?.(lent.handle)
  } catch (error) {
    if (lent.refusal) throw lent.refusal
    if (session.backend === 'pglite') throw onPglite(session, error)
    throw error
  } finally {
    lent.revoke()
  }
  if (lent.refusal) throw lent.refusal
  if (lent.running > 0) throw notAwaited(lent.running)
  return [...xids]
}

/**
 * A run that settled with its queries still running: what it sent before the closing snapshot
 * would be measured, the rest not (walcost's rollback waits behind them on the connection, and
 * what the code sends after it is refused).
 */
function notAwaited(running: number): WalcostError {
  return new WalcostError(
    'BATCH_NOT_AWAITED',
    `the run callback settled while ${counted(running, 'query', 'queries')} it had sent through the connection it was handed ${running === 1 ? 'was' : 'were'} still running or queued: it did not await ${running === 1 ? 'it' : 'them'}, so the measurement would have counted only part of the batch. walcost measured nothing and rolled back. Return the promise from run (run: (db) => insertOrders(db, rows)), or await it (run: async (db) => { await insertOrders(db, rows) }).`,
    { field: 'run' },
  )
}

/**
 * How drizzle-orm/node-postgres fails on a PGlite: it calls query() with pg's query config object,
 * which PGlite reads as SQL text.
 */
const PG_QUERY_CONFIG_ON_PGLITE = /The "src" argument must be of type string\. Received an instance of Object/

/** The app's code failing on PGlite the ways code written for a pg connection does, said as such; other errors as they are. */
function onPglite(session: Session, error: unknown): unknown {
  // PGlite runs in this process and listens on no port: a connection error is the code's own.
  if (isConnectionError(error)) return ownConnection(session, error)
  if (causeChain(error).some((at) => at instanceof Error && PG_QUERY_CONFIG_ON_PGLITE.test(at.message))) {
    return new WalcostError(
      'BATCH_FAILED',
      `the run callback drove the PGlite instance it was handed as a pg client (${describeError(error)}): on PGlite, run is handed the PGlite instance, and drizzle-orm/node-postgres cannot drive it. Use drizzle() from drizzle-orm/pglite there (run: (db) => drizzle(db).insert(...)), or give db a PostgreSQL connection string (--url) to measure the node-postgres code on a server.`,
      { field: 'run', cause: error },
    )
  }
  return error
}

function ownConnection(session: Session, cause: unknown): WalcostError {
  const text = describeError(cause)
  const where = session.embedded
    ? 'walcost measures on its embedded PGlite (db was not given), which runs in this process and has no server to connect to'
    : 'walcost measures on the PGlite instance given as db, which runs in this process, and the code reached for a server instead'
  return new WalcostError(
    'BATCH_FAILED',
    `the run callback opened a connection of its own, and it failed (${text}): ${where}. Write through the connection run is handed, the PGlite instance (run: (db) => insertOrders(db, rows), drizzle(db) from drizzle-orm/pglite). What code writes through a connection of its own is outside any measuring transaction: on a server, observeWal (walcost observe --url) reads what it commits.`,
    { field: 'run', cause },
  )
}

async function* copyChunks(rows: AsyncIterable<Values>, signal: AbortSignal | undefined): AsyncGenerator<string> {
  let chunk = ''
  for await (const values of rows) {
    chunk += copyLine(values)
    if (chunk.length >= COPY_CHUNK_BYTES) {
      throwIfAborted(signal)
      yield chunk
      chunk = ''
    }
  }
  if (chunk.length > 0) yield chunk
}
