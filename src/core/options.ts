import { z } from 'zod'
import type { BatchDatabaseFor, Database, SessionLimits } from './database.js'
import {
  DEFAULT_BATCH_SIZE,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FLUSH_TIMEOUT_MS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_METHOD,
  DEFAULT_SEED,
  DEFAULT_TIMING_PROBE,
  MAX_COUNT,
} from './defaults.js'
import { WalcostError } from './errors.js'
import { nearest } from './nearest.js'

/** A row to insert: column name to value (string, number, bigint, boolean, Date, Uint8Array, array, object, null). */
export type Row = Record<string, unknown>
export type RowSource = Iterable<Row> | AsyncIterable<Row>
/** Rows as an array or (async) iterable, or a function returning one: a function can be replayed. */
export type RowsInput = RowSource | (() => RowSource)

/**
 * The batch as the app's own code for a given `db`: called with walcost's connection (what that
 * `db` hands, see BatchDatabaseFor), inside the measuring transaction. Declared as a method's type
 * so that, where `db` is a union (`process.env.DATABASE_URL`: a string or undefined), a callback
 * taking the one kind of connection it knows (`(client: pg.PoolClient) => ...`) is accepted.
 */
export type BatchRunFor<Db> = { run(db: BatchDatabaseFor<Db>): unknown }['run']

/** The batch as the app's own code, for any `db`. */
export type BatchRun = BatchRunFor<Database | undefined>

/**
 * An entry point's options with `run` typed from `db`: with `db` omitted or a PGlite instance,
 * `run` is handed a PGlite; with a connection string, a Pool or a PoolClient, a pg PoolClient; with
 * a pg Client, that Client.
 */
export type WithDatabase<Options, Db extends Database | undefined> = Omit<Options, 'db' | 'run'> & {
  /** Where to measure: a connection string, a pg Client, Pool or PoolClient, or a PGlite instance. Omitted: an embedded PGlite. */
  db?: Db
  /** The batch as the app's own code, handed walcost's connection for `db` inside the measuring transaction. */
  run?: BatchRunFor<Db>
}

const isObject = (value: unknown): value is object => typeof value === 'object' && value !== null

/** node-postgres reads anything else as a host name and fails later with a DNS error. */
const isConnectionUrl = (text: string) => /^postgres(ql)?:\/\//i.test(text) && URL.canParse(text)

const databaseSchema = z.custom<Database>(
  (value) => (typeof value === 'string' ? isConnectionUrl(value) : isObject(value) && 'query' in value),
  {
    message:
      'expected a connection URL (postgres://user:password@host:5432/database), a pg Client, Pool or PoolClient, or a PGlite instance',
  },
)

const rowSourceSchema = z.custom<RowsInput>(
  (value) =>
    typeof value === 'function' || (isObject(value) && (Symbol.iterator in value || Symbol.asyncIterator in value)),
  { message: 'expected an array, an iterable (sync or async) of row objects, or a function returning one' },
)

export const abortSignalSchema = z.custom<AbortSignal>(
  (value) => isObject(value) && 'aborted' in value && 'addEventListener' in value,
  { message: 'expected an AbortSignal' },
)

/**
 * Where walcost connects and the bounds it runs under. Shared by every entry point that opens a database.
 */
export const connectionOptionsSchema = z.strictObject({
  db: databaseSchema
    .optional()
    .describe(
      'Where to measure: a connection string, a pg Client, Pool or PoolClient, or a PGlite instance. Omitted: a fresh embedded PGlite.',
    ),
  connectTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(600_000)
    .default(DEFAULT_CONNECT_TIMEOUT_MS)
    .describe(
      "Bound on connecting (or on a connection from a Pool); the URL's connect_timeout and PGCONNECT_TIMEOUT take precedence, as in libpq.",
    ),
  lockTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(3_600_000)
    .default(DEFAULT_LOCK_TIMEOUT_MS)
    .describe(
      'Bound on every lock wait of every statement walcost runs (lock_timeout); a blocked run fails with LOCK_TIMEOUT.',
    ),
  statementTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(86_400_000)
    .optional()
    .describe("Bound on every statement walcost runs, the batch's included (statement_timeout); none by default."),
  signal: abortSignalSchema.optional().describe('Stops the call; whatever it started is rolled back.'),
})

/**
 * Where the batch runs and what it inserts. Shared by every entry point that measures.
 */
export const batchOptionsSchema = connectionOptionsSchema.extend({
  table: z
    .string()
    .trim()
    .min(1, 'name the table to measure')
    .describe('The target table as `\'...\'::regclass` reads it: `metrics`, `app.metrics`, `"Odd ""Name"""`.'),
  setup: z.string().min(1).optional().describe('SQL run (and committed) before anything is measured: DDL, a prefill.'),
  sql: z
    .union([
      z.string().trim().min(1, 'give the statements that perform the inserts'),
      z.custom<(run: number, table: string) => string>((value) => typeof value === 'function', {
        message: 'expected SQL text or a function returning it',
      }),
    ])
    .optional()
    .describe(
      "The batch as SQL statements that perform the inserts, or a function of the run (0 first, so that repeated runs insert new keys) and of the table to insert into (quoted; a comparison's scratch copy on a real server), returning them.",
    ),
  run: z
    .custom<BatchRun>((value) => typeof value === 'function', {
      message: 'expected a function of the database, (db) => Promise, that runs the batch',
    })
    .optional()
    .describe(
      "The batch as the app's own code: called with walcost's connection inside the measuring transaction (a pg Client or PoolClient, or a PGlite instance; Drizzle and Kysely take it as they are), awaited, then rolled back. Its BEGIN and COMMIT run as savepoints; a COMMIT of walcost's transaction is refused.",
    ),
  rows: rowSourceSchema
    .optional()
    .describe(
      'The batch as row objects keyed by column name, streamed from an array, an (async) iterable, or a function returning one.',
    ),
  count: z
    .number()
    .int()
    .min(1, 'count must be at least 1')
    .max(
      MAX_COUNT,
      `count is limited to ${MAX_COUNT.toLocaleString('en-US')}; stream rows or use sql for larger batches`,
    )
    .optional()
    .describe("The batch as this many synthetic rows generated from the table's column types."),
  method: z
    .enum(['insert', 'multirow', 'copy'])
    .default(DEFAULT_METHOD)
    .describe('How `rows`/`count` are sent: one INSERT per row, multi-row INSERTs, or COPY FROM STDIN.'),
  batchSize: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(DEFAULT_BATCH_SIZE)
    .describe("Rows per statement for method 'multirow'."),
  seed: z
    .number()
    .int()
    .optional()
    .describe(
      `Seed of the synthetic rows of \`count\`: the same seed repeats the same rows, keys included. Without one, values are drawn as with seed ${DEFAULT_SEED} and unique keys are fresh on every call.`,
    ),
  flushTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(600_000)
    .default(DEFAULT_FLUSH_TIMEOUT_MS)
    .describe('How long to wait for the server to flush WAL past the window before reading it back.'),
})

const INSERT_BATCHES = ['sql', 'rows', 'count', 'run'] as const

/** A refinement: exactly one of `kinds` is given. */
export function exactlyOneOf<Kind extends string>(kinds: readonly Kind[]) {
  return (options: Partial<Record<Kind, unknown>>, context: z.RefinementCtx) => {
    const given = kinds.filter((key) => options[key] !== undefined)
    if (given.length === 1) return
    const choices = `${kinds.slice(0, -1).join(', ')} or ${kinds.at(-1)}`
    context.addIssue({
      code: 'custom',
      path: [given[1] ?? kinds[0] ?? 'sql'],
      message:
        given.length === 0
          ? `give the batch as exactly one of ${choices}`
          : `give the batch as exactly one of ${choices}, not ${given.join(' and ')}`,
    })
  }
}

export const exactlyOneBatch = exactlyOneOf(INSERT_BATCHES)

/**
 * For entry points that insert the batch several times: `rows` must be something that can be read
 * again (an array, or a function returning a fresh iterable), not a one-shot iterable.
 */
export function replayableRows(what: string) {
  return (options: { rows?: unknown }, context: z.RefinementCtx) => {
    if (options.rows !== undefined && typeof options.rows !== 'function' && !Array.isArray(options.rows)) {
      context.addIssue({
        code: 'custom',
        path: ['rows'],
        message: `${what} insert the same rows several times: pass an array, or a function that returns a fresh iterable each time`,
      })
    }
  }
}

/** What a single measurement adds to a batch: a CHECKPOINT before it, indexes dropped for it. */
export function measureShape() {
  return {
    checkpoint: z
      .boolean()
      .default(false)
      .describe('Run CHECKPOINT just before the batch, so the first change to every page logs a full-page image.'),
    dropIndexes: z
      .union([z.boolean(), z.array(z.string().min(1)).min(1)])
      .default(false)
      .describe(
        "Drop these indexes (true: all of the table's) inside the measured transaction; the rollback restores them.",
      ),
  }
}

/**
 * Options of {@link measureInsertCost}.
 *
 * @example
 * const options: MeasureOptions = { table: 'device_metrics', count: 10_000, method: 'copy', checkpoint: true }
 */
export const measureOptionsSchema = batchOptionsSchema
  .extend(measureShape())
  .extend({
    timingProbe: z
      .boolean()
      .default(DEFAULT_TIMING_PROBE)
      .describe(
        "After a batch of `rows` or `count`, send synthetic rows one INSERT a row, 50 an INSERT and by COPY, each rolled back, so that timing.parts splits a statement's time from a row's (estimateIngestCeiling plans another way of sending rows from them); false skips it.",
      ),
  })
  .superRefine(exactlyOneBatch)

export type ParsedConnectionOptions = z.output<typeof connectionOptionsSchema>

/** The bounds a session runs under, from parsed options. */
export function sessionLimits(options: ParsedConnectionOptions): SessionLimits {
  return {
    connectTimeoutMs: options.connectTimeoutMs,
    lockTimeoutMs: options.lockTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs,
  }
}
export type ParsedBatchOptions = z.output<typeof batchOptionsSchema>
export type MeasureOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof measureOptionsSchema>,
  Db
>
/** What one measurement runs on: measureInsertCost's options, and those each comparison's runs are made of. */
const measurementSchema = batchOptionsSchema.extend(measureShape())
export type ParsedMeasureOptions = z.output<typeof measurementSchema>

/** The keys an object schema knows, at `path` inside `schema` (through wrappers, pipes, unions and arrays). */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const unwrap = (current: z.ZodType): z.ZodType => {
    if (current instanceof z.ZodPipe) return unwrap(current.in as z.ZodType)
    if (current instanceof z.ZodOptional || current instanceof z.ZodDefault || current instanceof z.ZodNullable)
      return unwrap(current.unwrap() as z.ZodType)
    if (current instanceof z.ZodUnion) {
      const object = (current.options as z.ZodType[]).map(unwrap).find((option) => option instanceof z.ZodObject)
      return object ?? current
    }
    return current
  }
  let current = unwrap(schema)
  for (const key of path) {
    if (current instanceof z.ZodArray) current = unwrap(current.element as z.ZodType)
    else if (current instanceof z.ZodRecord) current = unwrap(current.valueType as z.ZodType)
    else if (current instanceof z.ZodObject)
      current = unwrap((current.shape as Record<string, z.ZodType>)[String(key)] ?? current)
  }
  return current instanceof z.ZodObject ? Object.keys(current.shape) : []
}

/** zod's unrecognized_keys, in the user's words: each key with the option it most likely meant. */
function unknownKeysMessage(schema: z.ZodType, path: readonly PropertyKey[], keys: readonly string[]): string {
  const prefix = path.map(String).join('.')
  const named = (key: string) => (prefix ? `${prefix}.${key}` : key)
  const known = keysAt(schema, path)
  const guesses = keys.map((key) => ({ key, near: nearest(key, known) }))
  if (guesses.length === 1 && guesses[0]) {
    const { key, near } = guesses[0]
    return near
      ? `unknown option ${named(key)}; did you mean ${named(near)}?`
      : `unknown option ${named(key)}; the options are ${known.join(', ')}`
  }
  const listed = guesses.map(({ key, near }) => (near ? `${named(key)} (did you mean ${named(near)}?)` : named(key)))
  return `unknown options ${listed.join(', ')}; the options are ${known.join(', ')}`
}

/** The first unknown key among the issues, inside a union's branches too (an object beside a preset's name). */
function unknownKeys(issues: readonly z.core.$ZodIssue[]): { path: PropertyKey[]; keys: string[] } | undefined {
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') return { path: issue.path, keys: issue.keys }
    if (issue.code !== 'invalid_union') continue
    for (const branch of issue.errors) {
      const found = unknownKeys(branch)
      if (found) return { path: [...issue.path, ...found.path], keys: found.keys }
    }
  }
  return undefined
}

/**
 * Validates options against a schema, turning the first problem into INVALID_OPTIONS naming the
 * field. An unknown key comes first: a misspelt option is the likeliest cause of every other issue.
 */
export function parseOptions<Schema extends z.ZodType>(schema: Schema, input: unknown): z.output<Schema> {
  const result = schema.safeParse(input)
  if (result.success) return result.data
  const { issues } = result.error
  const unknown = unknownKeys(issues)
  if (unknown) {
    const field = [...unknown.path, unknown.keys[0] ?? ''].map(String).join('.')
    const message = unknownKeysMessage(schema, unknown.path, unknown.keys)
    throw new WalcostError('INVALID_OPTIONS', /[.?]$/.test(message) ? message : `${message}.`, {
      field,
      cause: result.error,
    })
  }
  const issue = issues[0]
  const field = issue?.path.map(String).join('.') || 'options'
  // zod does not report the input it refused: a field is missing only when the input has none.
  const given = issue?.path.reduce<unknown>(
    (value, key) => (isObject(value) ? (value as Record<PropertyKey, unknown>)[key] : undefined),
    input,
  )
  const missing = issue?.code === 'invalid_type' && given === undefined
  const whole = issue?.code === 'invalid_type' && issue.expected === 'int'
  const message = missing
    ? `${field} is required`
    : whole
      ? `${field}: expected a whole number, got ${String(given)}`
      : `${field}: ${issue?.message ?? 'invalid'}`
  throw new WalcostError('INVALID_OPTIONS', `${message}.`, { field, cause: result.error })
}
