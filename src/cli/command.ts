import { readFile } from 'node:fs/promises'
import type { z } from 'zod'
import { suggestBudget, suggestBudgetOptionsSchema, type WalBudget, walBudgetSchema } from '../ci/budget.js'
import { runFromModule } from '../ci/run-module.js'
import { DEFAULT_PICK, DEFAULT_UPSERT_ACTION, DEFAULT_UPSERT_CONFLICT } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { parseOptions } from '../core/options.js'
import type { CostInput } from '../model/ceiling.js'
import { formatResult } from '../report/text.js'
import type { Result } from '../report/views.js'
import { flagsFromSchema, inputFromFlags } from './command-line.js'

/** The flags' values as parseArgs gives them. */
export type Values = Record<string, string | boolean | string[] | undefined>

// What every command's file shares: the command's shape, the flags common to several, and the
// helpers that turn those flags into the library's options.

export interface Outcome {
  /** The result contract, printed as it is with --json (with the budget's verdict when one was given); undefined: the command printed its own. */
  json: unknown
  /** What --vega and --html draw; a check has no chart. */
  result?: Result
  /** undefined: the command printed its own. */
  text: string | undefined
  /** 1 when a budget was exceeded; for observe, the observed command's exit status when it failed. */
  exitCode: number
}

export interface Command<Schema extends z.ZodType = z.ZodType> {
  /** The library's options for this command: flags are derived from it and input is checked against it. */
  schema: Schema
  /** Schema fields that are not flags (objects, functions) or are given through `extra`. */
  skip: readonly string[]
  /** Command-line-only flags: name, parseArgs config, help. */
  extra: Array<[string, { type: 'string' | 'boolean'; multiple?: boolean }, string]>
  /** The command takes `-- COMMAND ARGS...` after its flags: how its help shows them. */
  trailing?: string
  /** The command takes words of its own among its flags (files): how its help shows them. */
  positionals?: string
  /** Adds what the command-line-only flags (and the words after `--`, or the positional words) say to the input, before it is checked. */
  prepare?(input: Record<string, unknown>, values: Values, trailing: string[]): Promise<Record<string, unknown>>
  run(options: z.output<Schema>, values: Values): Promise<Outcome>
}

/** Keeps each command's options typed by its own schema inside the table of commands. */
export const command = <Schema extends z.ZodType>(definition: Command<Schema>): Command =>
  definition as unknown as Command

export const NOT_ON_THE_COMMAND_LINE = ['db', 'rows', 'run', 'signal', 'dropIndexes']
/** A command-line-only flag: its name, how parseArgs reads it, and its help. */
export const option = (name: string, help: string, type: 'string' | 'boolean' = 'string'): Command['extra'][number] => [
  name,
  { type },
  help,
]
export const repeated = (name: string, help: string): Command['extra'][number] => [
  name,
  { type: 'string', multiple: true },
  help,
]

export const connection = option(
  'url',
  '--url URL\n      PostgreSQL connection URL (default: DATABASE_URL, else the PG* variables, else an embedded PGlite)',
)
export const json = option(
  'json',
  "--json\n      print the result as JSON (the library's result object, exactly)",
  'boolean',
)
export const rowsFile = option(
  'rows',
  '--rows FILE\n      the batch from a .csv (header line of column names) or .jsonl file, streamed',
)
export const setupFile = option(
  'setup-file',
  '--setup-file FILE\n      SQL run (and committed) before anything is measured, read from FILE',
)
export const vega = option('vega', "--vega FILE\n      also write the result's chart as a Vega-Lite spec to FILE")
export const html = option(
  'html',
  '--html FILE\n      also write a self-contained HTML report (chart, table, summary; loads nothing) to FILE',
)
export const runModule = option(
  'run',
  "--run FILE\n      the batch as the app's own code: a module whose default export, async (db) => ..., walcost calls with its connection",
)
/** The flags of every command that measures a batch: where, how to print, the batch's files. */
export const BATCH_FLAGS = [connection, json, vega, html, rowsFile, runModule, setupFile]

/** The flags of a write batch other than inserts, for measure and compare-writes. */
export const WRITE_FLAGS = [
  option('update-rows', '--update-rows N\n      the batch updates N existing rows (with --set)'),
  repeated(
    'set',
    '--set COLUMN=EXPRESSION\n      what --update-rows (or --upsert-rows on conflict) sets, as SQL; repeat for more',
  ),
  option('delete-rows', '--delete-rows N\n      the batch deletes N existing rows'),
  option(
    'upsert-rows',
    "--upsert-rows N\n      the batch is INSERT ... ON CONFLICT of N rows shaped like existing ones, on the table's primary key",
  ),
  option(
    'conflict',
    `--conflict SHARE\n      share of --upsert-rows whose key exists already (default ${DEFAULT_UPSERT_CONFLICT})`,
  ),
  option(
    'on-conflict',
    `--on-conflict update|nothing\n      what a conflicting --upsert-rows row does (default ${DEFAULT_UPSERT_ACTION})`,
  ),
  option('pick', `--pick newest|oldest|random\n      which existing rows the batch takes (default ${DEFAULT_PICK})`),
]
export const budgetFlags = flagsFromSchema(walBudgetSchema, ['indexes'], 'budget-')
export const suggestFlags = flagsFromSchema(suggestBudgetOptionsSchema, [])

export async function readText(option: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: cannot read ${path} (${(error as Error).message}).`, {
      field: option,
      cause: error,
    })
  }
}

export async function readJson(option: string, path: string): Promise<unknown> {
  const text = await readText(option, path)
  try {
    return JSON.parse(text)
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: ${path} is not JSON (${(error as Error).message}).`, {
      field: option,
      cause: error,
    })
  }
}

/** What --rows, --run and --setup-file add to a measuring command's input. */
export async function batchInput(input: Record<string, unknown>, values: Values): Promise<Record<string, unknown>> {
  // csv-parse is loaded only for a batch from a file.
  const rows =
    typeof values.rows === 'string'
      ? { rows: await (await import('../measure/rows-file.js')).rowsFromFile(values.rows) }
      : {}
  const run = typeof values.run === 'string' ? { run: await runFromModule(values.run, '--run') } : {}
  const setup =
    typeof values['setup-file'] === 'string' ? { setup: await readText('setup-file', values['setup-file']) } : {}
  return { ...input, ...rows, ...run, ...setup }
}

export const plain = (result: Result, text = formatResult(result)): Outcome => ({
  json: result,
  result,
  text,
  exitCode: 0,
})

/** --update-rows with --set, --delete-rows, or --upsert-rows, as the library's update, delete or upsert batch. */
export function writeBatch(values: Values): Record<string, unknown> {
  const count = (flag: string) => {
    const text = values[flag]
    if (typeof text !== 'string') return undefined
    const rows = Number(text)
    if (!Number.isInteger(rows) || rows < 1) {
      throw new WalcostError('INVALID_OPTIONS', `--${flag} expects a whole number of rows, got '${text}'.`, {
        field: flag,
      })
    }
    return rows
  }
  const pick = typeof values.pick === 'string' ? { pick: values.pick } : {}
  const updateRows = count('update-rows')
  const deleteRows = count('delete-rows')
  const upsertRows = count('upsert-rows')
  const sets = Array.isArray(values.set) ? values.set : []
  if (updateRows === undefined && upsertRows === undefined && sets.length > 0) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      '--set needs --update-rows N (or --upsert-rows N): how many rows to write.',
      {
        field: 'set',
      },
    )
  }
  const conflict = typeof values.conflict === 'string' ? { conflict: Number(values.conflict) } : {}
  const action = typeof values['on-conflict'] === 'string' ? { action: values['on-conflict'] } : {}
  const set = Object.fromEntries(
    sets.map((entry) => {
      const at = entry.indexOf('=')
      if (at < 1)
        throw new WalcostError('INVALID_OPTIONS', `--set: expected COLUMN=EXPRESSION, got ${entry}.`, { field: 'set' })
      return [entry.slice(0, at).trim(), entry.slice(at + 1).trim()]
    }),
  )
  return {
    ...(updateRows !== undefined && { update: { rows: updateRows, set, ...pick } }),
    ...(deleteRows !== undefined && { delete: { rows: deleteRows, ...pick } }),
    ...(upsertRows !== undefined && {
      upsert: { rows: upsertRows, ...conflict, ...action, ...(sets.length > 0 && { set }), ...pick },
    }),
  }
}

/** What a ceiling starts from: --from a saved result, or --bytes-per-row. */
export async function costInput(values: Values): Promise<CostInput> {
  if (typeof values.from === 'string') return (await readJson('from', values.from)) as CostInput
  const bytes = values['bytes-per-row']
  const bytesPerRow = Number(bytes)
  if (typeof bytes !== 'string' || !(bytesPerRow > 0)) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      typeof bytes === 'string'
        ? `--bytes-per-row expects a positive number, got '${bytes}'.`
        : 'give --bytes-per-row N (WAL bytes a row), or --from FILE (a measurement or prediction saved with --json).',
      { field: 'bytes-per-row' },
    )
  }
  const ms = values['ms-per-row']
  if (ms === undefined) return { bytesPerRow }
  const msPerRow = Number(ms)
  if (typeof ms !== 'string' || !(msPerRow > 0)) {
    throw new WalcostError('INVALID_OPTIONS', `--ms-per-row expects a positive number of milliseconds, got '${ms}'.`, {
      field: 'ms-per-row',
    })
  }
  return { bytesPerRow, msPerRow }
}

/** The measurement and a budget for it, as a test, walcost.config.json and these flags take it. */
export function suggested(cost: Parameters<typeof suggestBudget>[0], values: Values): Outcome {
  const options = parseOptions(suggestBudgetOptionsSchema, inputFromFlags(suggestFlags, values))
  const budget = suggestBudget(cost, options)
  const flags = [
    ...budgetFlags.flatMap((flag) => {
      const limit = (budget as Record<string, unknown>)[flag.field]
      return typeof limit === 'number' ? [`--${flag.flag} ${limit}`] : []
    }),
    ...Object.entries(budget.indexes ?? {}).map(([name, limit]) => `--budget-index ${name}=${limit}`),
  ]
  const written = JSON.stringify(budget)
  return {
    json: { ...cost, suggestedBudget: budget },
    result: cost,
    text: [
      formatResult(cost),
      '',
      `suggested budget (what was measured, plus ${Math.round(options.headroom * 100)}% headroom, in whole bytes):`,
      `  in a test:              await expect(cost).toStayWithinWalBudget(${written})`,
      `  in walcost.config.json: "budget": ${written}`,
      `  on the command line:    ${flags.join(' ')}`,
    ].join('\n'),
    exitCode: 0,
  }
}

export function budgetFrom(values: Values): WalBudget | undefined {
  const bounds = inputFromFlags(budgetFlags, values)
  const indexes = Array.isArray(values['budget-index']) ? values['budget-index'] : []
  for (const entry of indexes) {
    const at = entry.lastIndexOf('=')
    if (at < 1)
      throw new WalcostError('INVALID_OPTIONS', `--budget-index: expected NAME=BYTES, got ${entry}.`, {
        field: 'budget-index',
      })
    bounds.indexes = { ...(bounds.indexes as object), [entry.slice(0, at)]: Number(entry.slice(at + 1)) }
  }
  return Object.keys(bounds).length > 0 ? (bounds as WalBudget) : undefined
}

/** The connection: --url, else DATABASE_URL, else the PG* variables node-postgres reads, else embedded. */
export function connectionUrl(url: string | undefined): string | undefined {
  if (url) return url
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL
  const { PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE } = process.env
  if (!PGHOST && !PGDATABASE && !PGUSER && !PGPORT) return undefined
  const user = PGUSER ?? process.env.USER ?? 'postgres'
  const credentials = `${encodeURIComponent(user)}${PGPASSWORD ? `:${encodeURIComponent(PGPASSWORD)}` : ''}@`
  const socket = PGHOST?.startsWith('/')
  const query = new URLSearchParams()
  if (socket) query.set('host', PGHOST as string)
  if (PGSSLMODE) query.set('sslmode', PGSSLMODE)
  const host = socket ? '' : `${PGHOST ?? 'localhost'}:${PGPORT ?? 5432}`
  const search = query.size > 0 ? `?${query.toString()}` : ''
  return `postgres://${credentials}${host}/${encodeURIComponent(PGDATABASE ?? user)}${search}`
}
