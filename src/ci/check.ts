import { readFile, writeFile } from 'node:fs/promises'
import { basename, dirname, resolve } from 'node:path'
import { z } from 'zod'
import { DEFAULT_METHOD, DEFAULT_TOLERANCE_PCT } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { integer, oneDecimal } from '../core/format.js'
import { type MeasureOptions, measureOptionsSchema, parseOptions } from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import { onDatabase, runSetup } from '../measure/lifecycle.js'
import { measureOnSession } from '../measure/measure.js'
import type { InsertCost } from '../measure/result.js'
import { renderTable } from '../report/text.js'
import { type BudgetViolation, checkWalBudget, violationText, walBudgetSchema } from './budget.js'
import { runFromModule } from './run-module.js'
import { type WalSummary, walSummary } from './summary.js'

// Budgets kept in the repository, as size-limit keeps bundle sizes: each measurement named in the
// config is run, held to its budget and compared with the baseline recorded by `check --update`.

const baselineSchema = z.strictObject({
  bytesPerRow: z.number(),
  recordsPerRow: z.number().nullable(),
  relations: z.record(z.string(), z.number()),
})

const checkedMeasurementSchema = z
  .strictObject({
    name: z.string().min(1).describe('How the measurement is called in the report.'),
    table: z.string().min(1).describe('The table the batch inserts into.'),
    setup: z.string().min(1).optional().describe('SQL that creates the schema (and a prefill) first.'),
    setupFile: z.string().min(1).optional().describe('The same, from a file (relative to the config).'),
    count: z.number().int().positive().optional().describe('The batch as synthetic rows.'),
    sql: z.string().min(1).optional().describe('The batch as SQL statements.'),
    sqlFile: z.string().min(1).optional().describe('The same, from a file (relative to the config).'),
    run: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The batch as the app's own code: a module (relative to the config) whose default export, async (db) => ..., walcost calls with its connection.",
      ),
    method: z.enum(['insert', 'multirow', 'copy']).default(DEFAULT_METHOD),
    checkpoint: z.boolean().default(false).describe('Measure right after a CHECKPOINT (images included).'),
    budget: walBudgetSchema.optional().describe('Bounds the measurement must stay within.'),
    tolerancePct: z
      .number()
      .min(0)
      .default(DEFAULT_TOLERANCE_PCT)
      .describe('How much a part may grow over the baseline, in percent, before the check fails.'),
    baseline: baselineSchema.optional().describe('What `walcost check --update` recorded.'),
  })
  .refine(
    (entry) => [entry.count, entry.sql, entry.sqlFile, entry.run].filter((value) => value !== undefined).length === 1,
    { message: 'give the batch as exactly one of count, sql, sqlFile or run', path: ['count'] },
  )

/** The options of `walcost check`. */
export const checkCommandSchema = z.strictObject({
  config: z
    .string()
    .min(1)
    .optional()
    .describe('The config file (default: walcost.config.json, else package.json\'s "walcost" key).'),
  update: z.boolean().default(false).describe('Record the current values as the baselines, in the config, and pass.'),
  markdown: z.boolean().default(false).describe('Print the report as markdown, for a pull-request comment.'),
})

/** walcost.config.json, or the `walcost` key of package.json. */
export const checkConfigSchema = z.strictObject({
  db: z.string().optional().describe('Where to measure (default: --url, DATABASE_URL, else a fresh embedded PGlite).'),
  measurements: z.array(checkedMeasurementSchema).min(1),
})

export type CheckConfig = z.input<typeof checkConfigSchema>
type CheckedMeasurement = z.output<typeof checkedMeasurementSchema>

/** One part of one measurement against its baseline. */
export interface CheckLine {
  measurement: string
  part: string
  /** Bytes per row in the baseline; null for a part that is new (an index added since). */
  baseline: number | null
  /** Bytes per row now; null for a part that is gone. */
  now: number | null
  /** It grew past the tolerance, or is new. */
  grew: boolean
  /** False for a measurement with no baseline yet: `now` is shown, nothing is compared. */
  recorded: boolean
}

export interface CheckReport {
  pass: boolean
  /** The file the budgets and baselines are kept in, as `--update` writes it. */
  config: string
  lines: CheckLine[]
  violations: Array<BudgetViolation & { measurement: string }>
  /** Measurements without a recorded baseline (run `walcost check --update`). */
  unrecorded: string[]
  summaries: Record<string, WalSummary>
}

/** Where the config came from, so that `--update` writes back into the same place. */
export interface LoadedConfig {
  path: string
  /** The key inside package.json, or null for walcost.config.json. */
  key: 'walcost' | null
  config: z.output<typeof checkConfigSchema>
}

/** Reads walcost.config.json, else the `walcost` key of package.json, in `directory` or the given file. */
export async function loadCheckConfig(file: string | undefined, directory = process.cwd()): Promise<LoadedConfig> {
  const candidates = file
    ? [resolve(directory, file)]
    : [resolve(directory, 'walcost.config.json'), resolve(directory, 'package.json')]
  for (const path of candidates) {
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch {
      continue
    }
    const json = configJson(path, text)
    const key = path.endsWith('package.json') ? 'walcost' : null
    if (key && !(key in json)) continue
    try {
      return { path, key, config: parseOptions(checkConfigSchema, key ? json[key] : json) }
    } catch (error) {
      // The file is what the user edits: name it, and the key inside package.json.
      if (!(error instanceof WalcostError)) throw error
      throw new WalcostError('INVALID_OPTIONS', `${path}${key ? ` ("${key}")` : ''}: ${error.message}`, {
        field: error.field,
        cause: error,
      })
    }
  }
  throw new WalcostError(
    'INVALID_OPTIONS',
    `no walcost config: create walcost.config.json (or a "walcost" key in package.json) with { "measurements": [{ "name", "table", "setupFile", "count", "budget" }] }${file ? `; ${file} was not found` : ''}.`,
    { field: 'config' },
  )
}

function configJson(path: string, text: string): Record<string, unknown> {
  try {
    const json: unknown = JSON.parse(text)
    if (typeof json === 'object' && json !== null && !Array.isArray(json)) return json as Record<string, unknown>
    throw new Error('expected an object')
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `${path} is not a JSON object (${(error as Error).message}).`, {
      field: 'config',
      cause: error,
    })
  }
}

/** Runs every measurement of the config and holds it to its budget and baseline. */
export async function runCheck(loaded: LoadedConfig, db: string | undefined): Promise<CheckReport> {
  const base = dirname(loaded.path)
  const report: CheckReport = {
    pass: true,
    config: basename(loaded.path),
    lines: [],
    violations: [],
    unrecorded: [],
    summaries: {},
  }
  for (const entry of loaded.config.measurements) {
    const cost = await measureFromSetup(
      {
        db: db ?? loaded.config.db,
        table: entry.table,
        sql: await textOf(base, entry.sql, entry.sqlFile, 'sqlFile'),
        count: entry.count,
        run: entry.run === undefined ? undefined : await runFromModule(entry.run, 'run', base),
        method: entry.method,
        checkpoint: entry.checkpoint,
      },
      await textOf(base, entry.setup, entry.setupFile, 'setupFile'),
    )
    // Whole bytes: the baseline keeps what the tolerance compares, not measurement noise.
    const summary = walSummary(cost, { round: 1 })
    report.summaries[entry.name] = summary
    if (entry.budget) {
      for (const violation of budgetViolations(loaded, entry, cost))
        report.violations.push({ ...violation, measurement: entry.name })
    }
    if (entry.baseline) report.lines.push(...compareWithBaseline(entry, summary))
    else {
      report.unrecorded.push(entry.name)
      report.lines.push(...measuredLines(entry.name, summary))
    }
  }
  report.pass = report.violations.length === 0 && report.lines.every((line) => !line.grew)
  return report
}

/** The entry's budget held to its measurement; a budget no measurement could hold names the file and the entry. */
function budgetViolations(loaded: LoadedConfig, entry: CheckedMeasurement, cost: InsertCost): BudgetViolation[] {
  try {
    return checkWalBudget(cost, entry.budget ?? {}).violations
  } catch (error) {
    if (!(error instanceof WalcostError)) throw error
    const index = loaded.config.measurements.findIndex((candidate) => candidate.name === entry.name)
    throw new WalcostError('INVALID_OPTIONS', `${loaded.path}: measurement ${entry.name}: ${error.message}`, {
      field: `measurements.${index}.budget.${error.field}`,
      cause: error,
    })
  }
}

/**
 * One measurement that starts from the same state on every check run: `setup` runs inside the
 * measuring transaction and is rolled back with the batch, so nothing it creates persists, on a
 * real server as on a fresh PGlite, and a killed run leaves nothing behind either.
 */
async function measureFromSetup(options: MeasureOptions, setup: string | undefined): Promise<InsertCost> {
  const parsed = parseOptions(measureOptionsSchema, options)
  return onDatabase(parsed, (session) =>
    rolledBack(session, 'transaction', async () => {
      if (setup !== undefined) {
        const [level] = await session.query<{ wal_level: string }>(`select current_setting('wal_level') as wal_level`)
        if (level?.wal_level === 'minimal') {
          throw new WalcostError(
            'UNSUPPORTED_SERVER',
            'walcost check runs setup inside the measuring transaction, and with wal_level = minimal a table created in the transaction writes no WAL: measure on a server with wal_level = replica (the default) or logical.',
          )
        }
        try {
          await runSetup(session, setup)
        } catch (error) {
          // 25001 active_sql_transaction: a statement that may not run inside a transaction block.
          if (!(error instanceof WalcostError) || error.sqlState !== '25001') throw error
          throw new WalcostError(
            error.code,
            `${error.message} walcost check runs setup inside the measuring transaction and rolls it back, so that every check starts from the same state: leave out of it what cannot run in a transaction (VACUUM, CREATE INDEX CONCURRENTLY).`,
            { cause: error.cause },
          )
        }
      }
      return measureOnSession(session, parsed, { enclosing: 'savepoint' })
    }),
  )
}

async function textOf(base: string, text: string | undefined, file: string | undefined, field: string) {
  if (text !== undefined || file === undefined) return text
  try {
    return await readFile(resolve(base, file), 'utf8')
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `${field}: cannot read ${file} (${(error as Error).message}).`, {
      field,
      cause: error,
    })
  }
}

/** What a measurement with no baseline measured, part by part, so that a first run shows its values. */
function measuredLines(measurement: string, now: WalSummary): CheckLine[] {
  return [
    { part: 'total', now: now.bytesPerRow },
    ...Object.entries(now.relations).map(([part, value]) => ({ part, now: value })),
  ].map(({ part, now: value }) => ({ measurement, part, baseline: null, now: value, grew: false, recorded: false }))
}

function compareWithBaseline(entry: CheckedMeasurement, now: WalSummary): CheckLine[] {
  const baseline = entry.baseline as z.output<typeof baselineSchema>
  const limit = (before: number) => before * (1 + entry.tolerancePct / 100) + 1
  const parts = [...new Set([...Object.keys(baseline.relations), ...Object.keys(now.relations)])]
  return [
    { part: 'total', baseline: baseline.bytesPerRow, now: now.bytesPerRow },
    ...parts.map((part) => ({ part, baseline: baseline.relations[part] ?? null, now: now.relations[part] ?? null })),
  ].map(({ part, baseline: before, now: after }) => ({
    measurement: entry.name,
    part,
    baseline: before,
    now: after,
    grew: after !== null && after > 0 && (before === null || after > limit(before)),
    recorded: true,
  }))
}

/** Writes the current summaries into the config as baselines: `walcost check --update`. */
export async function recordBaselines(loaded: LoadedConfig, report: CheckReport): Promise<void> {
  const json = JSON.parse(await readFile(loaded.path, 'utf8')) as Record<string, unknown>
  const config = (loaded.key ? json[loaded.key] : json) as { measurements: Array<Record<string, unknown>> }
  for (const entry of config.measurements) {
    const summary = report.summaries[entry.name as string]
    if (summary)
      entry.baseline = {
        bytesPerRow: summary.bytesPerRow,
        recordsPerRow: summary.recordsPerRow,
        relations: summary.relations,
      }
  }
  await writeFile(loaded.path, `${JSON.stringify(json, null, 2)}\n`)
}

const change = (line: CheckLine) =>
  !line.recorded
    ? '-'
    : line.baseline === null
      ? 'new'
      : line.now === null
        ? 'gone'
        : `${line.now >= line.baseline ? '+' : ''}${integer(line.now - line.baseline)}`
const changePct = (line: CheckLine) =>
  line.baseline && line.now !== null
    ? `${line.now >= line.baseline ? '+' : ''}${oneDecimal((100 * (line.now - line.baseline)) / line.baseline)}%`
    : ''

/** What changed, as a table: every part that grew, or every part with `all`. */
function changeRows(report: CheckReport, all: boolean): string[][] {
  return report.lines
    .filter((line) => all || line.grew)
    .map((line) => [
      line.measurement,
      line.part,
      line.baseline === null ? '-' : integer(line.baseline),
      line.now === null ? '-' : integer(line.now),
      change(line),
      changePct(line),
      !line.recorded ? 'no baseline' : line.grew ? 'grew' : 'ok',
    ])
}

const HEADERS = ['measurement', 'part', 'baseline B/row', 'now B/row', 'change', '%', 'against baseline']

/**
 * A budget and a baseline fail differently and are fixed differently: a budget is a limit the team
 * wrote, raised by editing it; a baseline is what was measured last, moved by --update, which
 * leaves the budgets as they are.
 */
function verdict(report: CheckReport): string[] {
  const failed = failures(report)
  return [
    ...report.violations.map(
      (v) => `${v.measurement}: over budget: ${violationText(v)}; raise it in ${report.config} if intended.`,
    ),
    ...report.unrecorded.map((name) => `${name}: no baseline yet; run walcost check --update and commit the config.`),
    ...(report.pass ? ['walcost check: within budgets and baselines.'] : []),
    ...(failed.includes('over budget')
      ? [
          `walcost check: over budget: raise it in ${report.config} if intended (walcost check --update does not change a budget).`,
        ]
      : []),
    ...(failed.includes('WAL per row grew')
      ? [
          'walcost check: WAL per row grew against the baseline: walcost check --update if intended, and commit the config.',
        ]
      : []),
  ]
}

/** The report as text for a terminal. */
export function formatCheck(report: CheckReport): string {
  const rows = changeRows(report, true)
  return [...(rows.length > 0 ? [renderTable(HEADERS, rows), ''] : []), ...verdict(report)].join('\n')
}

/** What failed, in the words of the verdict: a budget, a baseline, or both. */
function failures(report: CheckReport): string[] {
  return [
    ...(report.violations.length > 0 ? ['over budget'] : []),
    ...(report.lines.some((line) => line.grew) ? ['WAL per row grew'] : []),
  ]
}

/** The report as markdown, for a pull-request comment or GitHub's job summary: what grew first. */
export function checkMarkdown(report: CheckReport): string {
  const cells = (row: string[]) => `| ${row.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`
  const grew = changeRows(report, false)
  return [
    `### walcost: ${report.pass ? 'WAL per row within budgets and baselines' : failures(report).join(', ')}`,
    '',
    ...(grew.length > 0 ? [cells(HEADERS), `|${HEADERS.map(() => ' --- ').join('|')}|`, ...grew.map(cells), ''] : []),
    ...verdict(report).map((line) => `- ${line}`),
    '',
  ].join('\n')
}
