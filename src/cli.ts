import { readFile, writeFile } from 'node:fs/promises'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { checkWalBudget, walBudgetSchema, type WalBudget } from './budget.js'
import { flagFor, flagsFromSchema, inputFromFlags, parseArgsOptions, type Flag } from './command-line.js'
import { demoOptionsSchema, fieldNotesExperiment } from './demo.js'
import { WalcostError } from './errors.js'
import { auditIndexes, auditOptionsSchema } from './measure/audit.js'
import { measureInsertCost } from './measure/measure.js'
import { compareRemedies, remediesOptionsSchema } from './measure/remedies.js'
import { compareOptionsSchema, compareScenarios } from './measure/scenarios.js'
import { ceilingOptionsSchema, estimateIngestCeiling, type CostInput } from './model/ceiling.js'
import { predictInsertCost, predictOptionsSchema } from './model/predict.js'
import { measureOptionsSchema } from './options.js'
import { toMarkdown, toVegaLite } from './report/render.js'
import { formatAudit, formatComparison, formatInsertCost } from './report/text.js'
import type { Result } from './report/views.js'
import { rowsFromFile } from './rows-file.js'

type Values = Record<string, string | boolean | string[] | undefined>

interface Outcome {
  /** The result contract, printed as it is with --json. */
  result: Result
  text: string
  /** 1 when a budget was exceeded. */
  exitCode: 0 | 1
}

interface Command {
  summary: string
  /** Flags derived from the library's schema for this command. */
  flags: Flag[]
  /** Command-line-only flags: name, parseArgs config, help. */
  extra: Array<[string, { type: 'string' | 'boolean'; multiple?: boolean }, string]>
  run(input: Record<string, unknown>, values: Values): Promise<Outcome>
}

const NOT_ON_THE_COMMAND_LINE = ['db', 'rows', 'signal', 'dropIndexes']
const connection: Command['extra'][number] = ['url', { type: 'string' }, '--url URL\n      PostgreSQL connection string (default: DATABASE_URL, else the PG* variables, else an embedded PGlite)']
const json: Command['extra'][number] = ['json', { type: 'boolean' }, '--json\n      print the result as JSON (the library\'s result object, exactly)']
const rowsFile: Command['extra'][number] = ['rows', { type: 'string' }, '--rows FILE\n      the batch from a .csv (header line of column names) or .jsonl file, streamed']
const vega: Command['extra'][number] = ['vega', { type: 'string' }, '--vega FILE\n      also write the result\'s chart as a Vega-Lite spec to FILE']
const budgetFlags = flagsFromSchema(walBudgetSchema, ['indexes'], 'budget-')

async function readJson(option: string, path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8'))
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: cannot read JSON from ${path} (${(error as Error).message}).`, { field: option, cause: error })
  }
}

async function withRows(input: Record<string, unknown>, values: Values) {
  return typeof values.rows === 'string' ? { ...input, rows: await rowsFromFile(values.rows) } : input
}

const commands: Record<string, Command> = {
  demo: {
    summary: 'the field notes\' experiment: 100,000 rows into a table of 500,000 with three indexes, in every scenario',
    flags: flagsFromSchema(demoOptionsSchema, ['db']),
    extra: [connection, json, vega],
    async run(input) {
      const comparison = await fieldNotesExperiment(input)
      return { result: comparison, text: formatComparison(comparison), exitCode: 0 }
    },
  },
  measure: {
    summary: 'measure one insert batch: WAL per row, split into heap, each index, full-page images and the rest',
    flags: [...flagsFromSchema(measureOptionsSchema, NOT_ON_THE_COMMAND_LINE), ...budgetFlags],
    extra: [
      connection, json, vega, rowsFile,
      ['drop-indexes', { type: 'boolean' }, '--drop-indexes\n      drop every index of the table for the batch (restored by the rollback)'],
      ['drop-index', { type: 'string', multiple: true }, '--drop-index NAME\n      drop this index for the batch; repeat for more'],
      ['budget-index', { type: 'string', multiple: true }, '--budget-index NAME=N\n      WAL bytes per row allowed for one index; repeat for more'],
    ],
    async run(input, values) {
      const dropIndexes = Array.isArray(values['drop-index']) ? values['drop-index'] : values['drop-indexes'] === true
      const budget = budgetFrom(values)
      const cost = await measureInsertCost({ ...(await withRows(input, values)), dropIndexes } as never)
      if (!budget) return { result: cost, text: formatInsertCost(cost), exitCode: 0 }
      const check = checkWalBudget(cost, budget)
      return { result: cost, text: `${formatInsertCost(cost)}\n\n${check.message}`, exitCode: check.pass ? 0 : 1 }
    },
  },
  compare: {
    summary: 'the same batch after a CHECKPOINT, in steady state, without indexes and without each index: what each part costs',
    flags: flagsFromSchema(compareOptionsSchema, NOT_ON_THE_COMMAND_LINE),
    extra: [connection, json, vega, rowsFile],
    async run(input, values) {
      const comparison = await compareScenarios(await withRows(input, values) as never)
      return { result: comparison, text: formatComparison(comparison), exitCode: 0 }
    },
  },
  remedies: {
    summary: 'the four remedies (batching, dropping unused indexes, wal_compression, fewer checkpoints) measured side by side',
    flags: flagsFromSchema(remediesOptionsSchema, [...NOT_ON_THE_COMMAND_LINE, 'batchSizes', 'compression']),
    extra: [connection, json, vega, rowsFile,
      ['drop-index', { type: 'string', multiple: true }, '--drop-index NAME\n      try without this index (default: those never scanned that back no constraint); repeat for more']],
    async run(input, values) {
      const dropIndexes = Array.isArray(values['drop-index']) ? { dropIndexes: values['drop-index'] } : {}
      const remedies = await compareRemedies({ ...(await withRows(input, values)), ...dropIndexes } as never)
      return { result: remedies, text: toMarkdown(remedies), exitCode: 0 }
    },
  },
  predict: {
    summary: 'predict WAL per row from the table\'s definition (catalog and statistics only: nothing is written)',
    flags: flagsFromSchema(predictOptionsSchema, ['db', 'description']),
    extra: [connection, json, vega, ['description', { type: 'string' }, '--description FILE\n      a planned table as JSON: { columns: [{ name, type, nullable, avgWidth }], indexes: [{ name, columns, keyOrder }] }']],
    async run(input, values) {
      const description = typeof values.description === 'string' ? await readJson('description', values.description) : undefined
      const prediction = await predictInsertCost({ ...input, ...(description ? { description, db: undefined } : {}) } as never)
      return { result: prediction, text: toMarkdown(prediction), exitCode: 0 }
    },
  },
  ceiling: {
    summary: 'the ingest rate a storage sustains at a WAL cost per row, and which limit binds first',
    flags: flagsFromSchema(ceilingOptionsSchema, []),
    extra: [json, vega,
      ['bytes-per-row', { type: 'string' }, '--bytes-per-row N\n      WAL bytes per row'],
      ['from', { type: 'string' }, '--from FILE\n      a measurement or prediction saved with --json']],
    async run(input, values) {
      const cost: CostInput = typeof values.from === 'string'
        ? await readJson('from', values.from) as CostInput
        : { bytesPerRow: Number(values['bytes-per-row']) }
      const ceiling = estimateIngestCeiling(cost, input)
      return { result: ceiling, text: toMarkdown(ceiling), exitCode: 0 }
    },
  },
  audit: {
    summary: 'each index\'s write cost (measured on a scratch copy, rolled back) against how often it is scanned',
    flags: flagsFromSchema(auditOptionsSchema, NOT_ON_THE_COMMAND_LINE),
    extra: [connection, json, vega, rowsFile],
    async run(input, values) {
      const audit = await auditIndexes(await withRows(input, values) as never)
      return { result: audit, text: formatAudit(audit), exitCode: 0 }
    },
  },
}

function budgetFrom(values: Values): WalBudget | undefined {
  const bounds = inputFromFlags(budgetFlags, values)
  const indexes = Array.isArray(values['budget-index']) ? values['budget-index'] : []
  for (const entry of indexes) {
    const at = entry.lastIndexOf('=')
    if (at < 1) throw new WalcostError('INVALID_OPTIONS', `--budget-index: expected NAME=BYTES, got ${entry}.`, { field: 'budget-index' })
    bounds.indexes = { ...(bounds.indexes as object), [entry.slice(0, at)]: Number(entry.slice(at + 1)) }
  }
  return Object.keys(bounds).length > 0 ? bounds as WalBudget : undefined
}

function usage(): string {
  const names = Object.keys(commands)
  return [
    'walcost: what PostgreSQL inserts really write to WAL',
    '',
    `usage: walcost <${names.join('|')}> [options]`,
    '       walcost <command> --help',
    '',
    ...names.map((name) => `  ${name.padEnd(9)}${commands[name]!.summary}`),
  ].join('\n')
}

function commandHelp(name: string, command: Command): string {
  return [
    `usage: walcost ${name} [options]`,
    '',
    command.summary,
    '',
    ...command.extra.map(([, , help]) => `  ${help}`),
    ...command.flags.map((flag) => `  ${flag.help}`),
    '  -h, --help',
  ].join('\n')
}

/** The connection: --url, else DATABASE_URL, else the PG* variables node-postgres reads, else embedded. */
function connectionUrl(url: string | undefined): string | undefined {
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

/** A connection string fit to print: the password is never shown. */
function withoutPassword(url: string): string {
  return url.replace(/^(\w+:\/\/[^:@/]*):[^@/]*@/, '$1:***@').replace(/([?&]password=)[^&]*/, '$1***')
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '-h' || name === '--help') {
    console.log(usage())
    return name === undefined ? 2 : 0
  }
  const command = commands[name]
  if (!command) {
    console.error(`walcost: unknown command ${name}\n\n${usage()}`)
    return 2
  }
  const options: ParseArgsConfig['options'] = {
    ...parseArgsOptions(command.flags),
    ...Object.fromEntries(command.extra.map(([flag, config]) => [flag, config])),
    help: { type: 'boolean', short: 'h' },
  }
  let values: Values
  try {
    values = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as Values
  } catch (error) {
    console.error(`walcost ${name}: ${(error as Error).message}\n\n${commandHelp(name, command)}`)
    return 2
  }
  if (values.help) {
    console.log(commandHelp(name, command))
    return 0
  }
  const url = connectionUrl(typeof values.url === 'string' ? values.url : undefined)
  if (process.stderr.isTTY) process.stderr.write(`walcost ${name}: on ${url ? withoutPassword(url) : 'an embedded PGlite'}...\n`)
  try {
    const outcome = await command.run({ ...inputFromFlags(command.flags, values), ...(url && name !== 'ceiling' ? { db: url } : {}) }, values)
    if (typeof values.vega === 'string') await writeFile(values.vega, JSON.stringify(toVegaLite(outcome.result), null, 2))
    console.log(values.json ? JSON.stringify(outcome.result, null, 2) : outcome.text)
    return outcome.exitCode
  } catch (error) {
    if (!(error instanceof WalcostError)) throw error
    const flag = flagFor(command.flags, error.field)
    const message = flag && error.code === 'INVALID_OPTIONS' ? error.message.replace(error.field ?? '', flag) : error.message
    console.error(`walcost ${name}: ${error.code}: ${url ? message.replaceAll(url, withoutPassword(url)) : message}`)
    return 2
  }
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code },
  (error: unknown) => {
    console.error(`walcost: ${error instanceof Error ? error.stack ?? error.message : String(error)}`)
    process.exitCode = 2
  },
)
