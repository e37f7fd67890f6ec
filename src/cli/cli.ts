import { appendFile, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { constants as osConstants } from 'node:os'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import type { z } from 'zod'
import {
  auditIndexes,
  calibrateIngest,
  compareMigration,
  compareRemedies,
  compareScenarios,
  compareWriteScenarios,
  estimateIngestCeiling,
  fieldNotesExperiment,
  inspectWal,
  measureInsertCost,
  measureWriteCost,
  observeWal,
  predictInsertCost,
} from '../api.js'
import {
  checkWalBudget,
  suggestBudget,
  suggestBudgetOptionsSchema,
  type WalBudget,
  walBudgetSchema,
} from '../ci/budget.js'
import {
  checkCommandSchema,
  checkMarkdown,
  formatCheck,
  loadCheckConfig,
  recordBaselines,
  runCheck,
} from '../ci/check.js'
import { runFromModule } from '../ci/run-module.js'
import { auditOptionsSchema } from '../compare/audit.js'
import { fieldNotesOptionsSchema } from '../compare/field-notes.js'
import { migrationOptionsSchema } from '../compare/migration.js'
import { remediesOptionsSchema } from '../compare/remedies.js'
import { scenariosOptionsSchema } from '../compare/scenarios.js'
import { writeScenariosOptionsSchema } from '../compare/write-scenarios.js'
import {
  DEFAULT_EXPORTER_INTERVAL_MS,
  DEFAULT_FILLFACTORS,
  DEFAULT_PICK,
  DEFAULT_RECONNECT_MS,
  DEFAULT_UPSERT_ACTION,
  DEFAULT_UPSERT_CONFLICT,
  DEFAULT_WATCH_INTERVAL_MS,
} from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { size } from '../core/format.js'
import { parseOptions } from '../core/options.js'
import { rowsFromFile } from '../measure/rows-file.js'
import { writeOptionsSchema } from '../measure/write.js'
import { type CostInput, ceilingOptionsSchema, STORAGE_PRESETS } from '../model/ceiling.js'
import { predictOptionsSchema } from '../model/predict.js'
import { toHtmlReport } from '../report/html-report.js'
import { toVegaLite } from '../report/render.js'
import { formatResult } from '../report/text.js'
import type { Result } from '../report/views.js'
import { walMetricsOptionsSchema } from '../traffic/exporter.js'
import { inspectOptionsSchema } from '../traffic/inspect.js'
import { observeOptionsSchema } from '../traffic/observe.js'
import { watchOptionsSchema } from '../traffic/watch.js'
import type { ArchiveProgress } from '../wal/read-archive.js'
import {
  argumentProblem,
  flagFor,
  flagsFromSchema,
  inFlagWords,
  inputFromFlags,
  joinNegativeValues,
  millisecondsFlag,
  parseArgsOptions,
  repeatedFlag,
} from './command-line.js'
import { exporterInput, runExporter } from './exporter-command.js'
import { type CommandRun, commandRun } from './run-command.js'
import { runTop, topInput } from './top-command.js'

type Values = Record<string, string | boolean | string[] | undefined>

interface Outcome {
  /** The result contract, printed as it is with --json (with the budget's verdict when one was given); undefined: the command printed its own. */
  json: unknown
  /** What --vega and --html draw; a check has no chart. */
  result?: Result
  /** undefined: the command printed its own. */
  text: string | undefined
  /** 1 when a budget was exceeded; for observe, the observed command's exit status when it failed. */
  exitCode: number
}

interface Command<Schema extends z.ZodType = z.ZodType> {
  summary: string
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
const command = <Schema extends z.ZodType>(definition: Command<Schema>): Command => definition as unknown as Command

/** The signals that end walcost observe's window early, as Ctrl-C and a service manager send them. */
const STOPPING_SIGNALS = ['SIGINT', 'SIGTERM'] as const

const NOT_ON_THE_COMMAND_LINE = ['db', 'rows', 'run', 'signal', 'dropIndexes']
/** A command-line-only flag: its name, how parseArgs reads it, and its help. */
const option = (name: string, help: string, type: 'string' | 'boolean' = 'string'): Command['extra'][number] => [
  name,
  { type },
  help,
]
const repeated = (name: string, help: string): Command['extra'][number] => [
  name,
  { type: 'string', multiple: true },
  help,
]

const connection = option(
  'url',
  '--url URL\n      PostgreSQL connection URL (default: DATABASE_URL, else the PG* variables, else an embedded PGlite)',
)
const json = option('json', "--json\n      print the result as JSON (the library's result object, exactly)", 'boolean')
const rowsFile = option(
  'rows',
  '--rows FILE\n      the batch from a .csv (header line of column names) or .jsonl file, streamed',
)
const setupFile = option(
  'setup-file',
  '--setup-file FILE\n      SQL run (and committed) before anything is measured, read from FILE',
)
const vega = option('vega', "--vega FILE\n      also write the result's chart as a Vega-Lite spec to FILE")
const html = option(
  'html',
  '--html FILE\n      also write a self-contained HTML report (chart, table, summary; loads nothing) to FILE',
)
const runModule = option(
  'run',
  "--run FILE\n      the batch as the app's own code: a module whose default export, async (db) => ..., walcost calls with its connection",
)
/** The flags of every command that measures a batch: where, how to print, the batch's files. */
const BATCH_FLAGS = [connection, json, vega, html, rowsFile, runModule, setupFile]

/** The flags of a write batch other than inserts, for measure and compare-writes. */
const WRITE_FLAGS = [
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
const budgetFlags = flagsFromSchema(walBudgetSchema, ['indexes'], 'budget-')
const suggestFlags = flagsFromSchema(suggestBudgetOptionsSchema, [])

async function readText(option: string, path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: cannot read ${path} (${(error as Error).message}).`, {
      field: option,
      cause: error,
    })
  }
}

async function readJson(option: string, path: string): Promise<unknown> {
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
async function batchInput(input: Record<string, unknown>, values: Values): Promise<Record<string, unknown>> {
  const rows = typeof values.rows === 'string' ? { rows: await rowsFromFile(values.rows) } : {}
  const run = typeof values.run === 'string' ? { run: await runFromModule(values.run, '--run') } : {}
  const setup =
    typeof values['setup-file'] === 'string' ? { setup: await readText('setup-file', values['setup-file']) } : {}
  return { ...input, ...rows, ...run, ...setup }
}

const plain = (result: Result, text = formatResult(result)): Outcome => ({ json: result, result, text, exitCode: 0 })

const commands: Record<string, Command> = {
  demo: command({
    summary: "the field notes' experiment: 100,000 rows into a table of 500,000 with three indexes, in every scenario",
    schema: fieldNotesOptionsSchema,
    skip: ['db', 'signal'],
    extra: [connection, json, vega, html],
    async run(options) {
      // Ctrl-C stops the demo, which drops the schema it created; a second one quits at once.
      const stop = new AbortController()
      const onSigint = () => {
        process.stderr.write('walcost demo: interrupted; rolling back and dropping what the demo created...\n')
        process.once('SIGINT', () => process.exit(130))
        stop.abort()
      }
      process.once('SIGINT', onSigint)
      try {
        return plain(await fieldNotesExperiment({ ...options, signal: stop.signal }))
      } catch (error) {
        if (!(stop.signal.aborted && error instanceof WalcostError && error.code === 'ABORTED')) throw error
        process.stderr.write(`walcost demo: ${error.message}\n`)
        return { json: undefined, text: undefined, exitCode: 130 }
      } finally {
        process.removeListener('SIGINT', onSigint)
      }
    },
  }),
  measure: command({
    summary:
      'measure one batch (inserts; or --update-rows, --delete-rows, --upsert-rows, or --sql with any writes): WAL per row, split into heap, each index, full-page images and the rest, with HOT explained for updates',
    schema: writeOptionsSchema,
    skip: NOT_ON_THE_COMMAND_LINE,
    extra: [
      ...BATCH_FLAGS,
      option(
        'drop-indexes',
        '--drop-indexes\n      drop every index of the table for the batch (restored by the rollback)',
        'boolean',
      ),
      repeated('drop-index', '--drop-index NAME\n      drop this index for the batch; repeat for more'),
      ...budgetFlags.map((flag) => option(flag.flag, flag.help)),
      repeated('budget-index', '--budget-index NAME=N\n      WAL bytes per row allowed for one index; repeat for more'),
      option(
        'suggest-budget',
        '--suggest-budget\n      print a budget for this batch: bytes per row and each index, with --headroom over what was measured',
        'boolean',
      ),
      ...suggestFlags.map((flag) => option(flag.flag, flag.help)),
      ...WRITE_FLAGS,
    ],
    async prepare(input, values) {
      const dropIndexes = Array.isArray(values['drop-index']) ? values['drop-index'] : values['drop-indexes'] === true
      return { ...(await batchInput(input, values)), dropIndexes, ...writeBatch(values) }
    },
    async run(options, values) {
      const budget = budgetFrom(values)
      // Updates and deletes get HOT explained and their deferred VACUUM; inserts keep their result.
      const writes =
        options.update ||
        options.delete ||
        options.upsert ||
        /\b(update|delete|merge|on\s+conflict)\b/i.test(typeof options.sql === 'string' ? options.sql : '')
      const cost = writes ? await measureWriteCost(options) : await measureInsertCost(options)
      if (values['suggest-budget'] === true) return suggested(cost, values)
      if (!budget) return plain(cost)
      const check = checkWalBudget(cost, budget)
      return {
        json: { ...cost, budget: check },
        result: cost,
        text: `${formatResult(cost)}\n\n${check.message}`,
        exitCode: check.pass ? 0 : 1,
      }
    },
  }),
  compare: command({
    summary:
      'the same batch after a CHECKPOINT, in steady state, without indexes and without each index: what each part costs',
    schema: scenariosOptionsSchema,
    skip: NOT_ON_THE_COMMAND_LINE,
    extra: BATCH_FLAGS,
    prepare: batchInput,
    run: async (options) => plain(await compareScenarios(options)),
  }),
  'compare-writes': command({
    summary:
      'a write batch (--update-rows, --delete-rows, --upsert-rows or --sql) from identical starting states after a CHECKPOINT: as given, without each index, at fillfactor 100, 90 and 70',
    schema: writeScenariosOptionsSchema,
    skip: [...NOT_ON_THE_COMMAND_LINE, 'fillfactors'],
    extra: [
      ...BATCH_FLAGS,
      ...WRITE_FLAGS,
      repeated(
        'fillfactor',
        `--fillfactor N\n      rewrite a copy of the table at this fillfactor (default ${DEFAULT_FILLFACTORS.join(', ')}); repeat for more`,
      ),
    ],
    async prepare(input, values) {
      const fillfactors = Array.isArray(values.fillfactor) ? { fillfactors: values.fillfactor.map(Number) } : {}
      return { ...(await batchInput(input, values)), ...writeBatch(values), ...fillfactors }
    },
    run: async (options) => plain(await compareWriteScenarios(options)),
  }),
  remedies: command({
    summary:
      'the four remedies (batching, dropping unused indexes, wal_compression, fewer checkpoints) measured side by side',
    schema: remediesOptionsSchema,
    skip: [...NOT_ON_THE_COMMAND_LINE, 'batchSizes', 'compression'],
    extra: [
      ...BATCH_FLAGS,
      repeated(
        'drop-index',
        '--drop-index NAME\n      try without this index (default: those never scanned that back no constraint); repeat for more',
      ),
    ],
    async prepare(input, values) {
      const dropIndexes = Array.isArray(values['drop-index']) ? { dropIndexes: values['drop-index'] } : {}
      return { ...(await batchInput(input, values)), ...dropIndexes }
    },
    run: async (options) => plain(await compareRemedies(options)),
  }),
  predict: command({
    summary: "predict WAL per row from the table's definition (catalog and statistics only: nothing is written)",
    schema: predictOptionsSchema,
    skip: ['db', 'description', 'signal'],
    extra: [
      connection,
      json,
      vega,
      html,
      setupFile,
      option(
        'description',
        '--description FILE\n      a planned table as JSON: { columns: [{ name, type, nullable, avgWidth }], indexes: [{ name, method, columns, keyOrder, keys }] }',
      ),
    ],
    async prepare(input, values) {
      if (typeof values.description !== 'string') return batchInput(input, values)
      const { db: _unused, ...rest } = await batchInput(input, values)
      return { ...rest, description: await readJson('description', values.description) }
    },
    run: async (options) => plain(await predictInsertCost(options)),
  }),
  ceiling: command({
    summary: 'the ingest rate a storage sustains at a WAL cost per row, and which limit binds first',
    schema: ceilingOptionsSchema,
    skip: ['storage'],
    extra: [
      json,
      vega,
      html,
      option(
        'storage',
        `--storage ${Object.keys(STORAGE_PRESETS).join('|')}|JSON\n      a preset, or the storage as JSON: '{"writeMBps":500,"iops":20000,"fsyncMs":0.5}' (default gp3)`,
      ),
      option('bytes-per-row', '--bytes-per-row N\n      WAL bytes per row'),
      option(
        'ms-per-row',
        "--ms-per-row MS\n      with --bytes-per-row: the server's time a row (a measurement's timing.msPerRow), for the server CPU limit",
      ),
      option('from', '--from FILE\n      a measurement or prediction saved with --json'),
      option(
        'calibrate',
        '--calibrate\n      instead: a short real ingest on a scratch copy of --table at --url (committed on the copy, dropped afterwards): the flush time and bandwidth, server time a row and a commit, how commits group, and how far the estimate was from each run',
        'boolean',
      ),
      connection,
      option('table', '--table NAME\n      with --calibrate: the table to copy and ingest into'),
    ],
    async prepare(input, values) {
      const storage = values.storage
      if (typeof storage !== 'string') return input
      if (!storage.trim().startsWith('{')) return { ...input, storage }
      try {
        return { ...input, storage: JSON.parse(storage) }
      } catch (error) {
        throw new WalcostError(
          'INVALID_OPTIONS',
          `--storage: not a preset and not JSON (${(error as Error).message}).`,
          {
            field: 'storage',
            cause: error,
          },
        )
      }
    },
    async run(options, values) {
      if (values.calibrate) {
        if (typeof values.table !== 'string')
          throw new WalcostError('INVALID_OPTIONS', 'table: --calibrate needs --table NAME.', { field: 'table' })
        const db = connectionUrl(typeof values.url === 'string' ? values.url : undefined)
        return plain(
          await calibrateIngest({
            ...(db === undefined ? {} : { db }),
            table: values.table,
            ...(options.cores === undefined ? {} : { cores: options.cores }),
            ...(typeof values.storage === 'string' ? { storage: options.storage } : {}),
          }),
        )
      }
      const cost = await costInput(values)
      return plain(estimateIngestCeiling(cost, options))
    },
  }),
  migration: command({
    summary:
      'the batch before and after a migration (applied inside the measuring transaction, rolled back): what it adds a row, by relation',
    schema: migrationOptionsSchema,
    skip: [...NOT_ON_THE_COMMAND_LINE, 'migration'],
    extra: [...BATCH_FLAGS, option('migration', '--migration FILE\n      the migration as SQL, read from FILE')],
    async prepare(input, values) {
      const migration =
        typeof values.migration === 'string' ? { migration: await readText('migration', values.migration) } : {}
      return { ...(await batchInput(input, values)), ...migration }
    },
    run: async (options) => plain(await compareMigration(options)),
  }),
  check: command({
    summary:
      'run the measurements named in walcost.config.json (or package.json "walcost"): fail when one is over its budget or grew past the recorded baseline',
    schema: checkCommandSchema,
    skip: [],
    extra: [connection, json],
    // The connection goes to runCheck beside the options, which name only the config.
    prepare: async ({ db: _unused, ...rest }) => rest,
    async run(options, values) {
      const loaded = await loadCheckConfig(options.config)
      const report = await runCheck(
        loaded,
        typeof values.url === 'string' ? connectionUrl(values.url) : connectionUrl(undefined),
      )
      if (options.update) {
        await recordBaselines(loaded, report)
        const names = Object.keys(report.summaries).join(', ')
        return { json: report, text: `walcost check: recorded baselines of ${names} in ${loaded.path}.`, exitCode: 0 }
      }
      const markdown = checkMarkdown(report)
      // On GitHub Actions the job's summary page shows the same table as a pull-request comment would.
      if (process.env.GITHUB_STEP_SUMMARY) await appendFile(process.env.GITHUB_STEP_SUMMARY, markdown)
      return { json: report, text: options.markdown ? markdown : formatCheck(report), exitCode: report.pass ? 0 : 1 }
    },
  }),
  observe: command({
    summary:
      'the WAL of everything the server writes while a command runs (or for --seconds N), from every session: which tables and indexes it came from',
    schema: observeOptionsSchema,
    skip: ['db', 'signal', 'stop', 'run', 'durationMs'],
    extra: [
      connection,
      json,
      vega,
      html,
      option('seconds', '--seconds N\n      observe for N seconds (instead of a command after --)'),
    ],
    trailing:
      '-- COMMAND ARGS...\n      observe while walcost runs COMMAND and waits for it (its output goes to stderr)',
    async prepare(input, values, trailing) {
      const seconds = values.seconds
      if (typeof seconds === 'string' && trailing.length > 0) {
        throw new WalcostError('INVALID_OPTIONS', 'give --seconds N or a command after --, not both.', {
          field: 'seconds',
        })
      }
      const durationMs = millisecondsFlag(values, 'seconds')
      if (durationMs !== undefined) return { ...input, durationMs }
      if (trailing.length === 0) {
        throw new WalcostError(
          'INVALID_OPTIONS',
          'give the window: --seconds N, or the command to observe after --, e.g. walcost observe --url URL -- pgbench -c 4 -T 10 URL.',
          { field: 'seconds' },
        )
      }
      return { ...input, run: commandRun(trailing) }
    },
    async run(options) {
      const command = options.run as CommandRun | undefined
      // SIGINT or SIGTERM ends the window where it is, passed on to the command, whose end closes
      // it: the observation so far is printed, marked partial. A second signal quits at once.
      const stop = new AbortController()
      let stoppedBy: NodeJS.Signals | null = null
      const onSignal = (signal: NodeJS.Signals) => {
        stoppedBy = signal
        process.stderr.write(
          `walcost observe: ${signal}: ending the window${command ? ' once the command has ended' : ''}; a second ${signal} quits at once.\n`,
        )
        for (const name of STOPPING_SIGNALS) {
          process.removeListener(name, onSignal)
          process.once(name, () => process.exit(128 + osConstants.signals[name]))
        }
        stop.abort()
        command?.kill(signal)
      }
      for (const name of STOPPING_SIGNALS) process.once(name, onSignal)
      let observation: Awaited<ReturnType<typeof observeWal>>
      try {
        observation = await observeWal({ ...options, stop: stop.signal })
      } finally {
        for (const name of STOPPING_SIGNALS) process.removeListener(name, onSignal)
      }
      const signalled = stoppedBy as NodeJS.Signals | null
      const exitCode = command ? (command.exitCode ?? 0) : signalled ? 128 + osConstants.signals[signalled] : 0
      const ended = signalled
        ? `Interrupted by ${signalled}: the window ended early, after ${(observation.window.durationMs / 1000).toFixed(1)} s; what it saw until then:\n\n`
        : ''
      const text = `${ended}${formatResult(observation)}`
      return {
        json: observation,
        result: observation,
        text: command && exitCode !== 0 ? `${text}\n\nThe command exited with status ${exitCode}.` : text,
        exitCode,
      }
    },
  }),
  inspect: command({
    summary:
      'which tables and indexes WAL segment files wrote, read from disk with no server needed: an archive (pgBackRest, barman, WAL-G, a folder) or a copy of pg_wal; plain, gzip, lz4, zstd, bzip2, brotli',
    schema: inspectOptionsSchema,
    skip: ['db', 'signal', 'files', 'dir', 'onProgress'],
    extra: [
      option(
        'url',
        "--url URL\n      a server whose catalog names the relfilenodes, each database's (default: DATABASE_URL, else the PG* variables; none: relations by database and relfilenode)",
      ),
      json,
      vega,
      html,
    ],
    positionals:
      'DIR|FILE...\n      WAL segment files and folders of them, in any order; history files for a timeline switch',
    async prepare(input, _values, files) {
      if (files.length === 0)
        throw new WalcostError(
          'INVALID_OPTIONS',
          'give the WAL to read: a folder of segments or segment files, e.g. walcost inspect /var/lib/postgresql/wal-archive.',
          { field: 'files' },
        )
      return { ...input, files, ...(process.stderr.isTTY ? { onProgress: progressLine() } : {}) }
    },
    async run(options) {
      const observation = await inspectWal(options)
      if (process.stderr.isTTY) process.stderr.write('\n')
      return { json: observation, result: observation, text: formatResult(observation), exitCode: 0 }
    },
  }),
  top: command({
    summary:
      'a live view of the WAL the server writes, interval by interval: WAL per second by table and index, its share, image share and records per second, with totals since start (Ctrl-C ends it)',
    schema: watchOptionsSchema,
    skip: ['db', 'signal', 'intervalMs', 'durationMs', 'onInterval'],
    extra: [
      connection,
      option(
        'json',
        "--json\n      one line of JSON an interval: that interval's wal-observation (the library's result object), its window the interval's",
        'boolean',
      ),
      option(
        'interval',
        `--interval S\n      seconds each interval lasts (default: ${DEFAULT_WATCH_INTERVAL_MS / 1000})`,
      ),
      option('seconds', '--seconds N\n      stop after N seconds (default: at Ctrl-C), printing the totals'),
      option(
        'reconnect-seconds',
        `--reconnect-seconds N\n      after a lost connection or a server restart, go on connecting again for N seconds before giving up, printing the totals (default: ${DEFAULT_RECONNECT_MS / 1000})`,
      ),
    ],
    prepare: async (input, values) => topInput(input, values),
    async run(options, values) {
      const { text, failure } = await runTop(
        options,
        values.json === true,
        millisecondsFlag(values, 'reconnect-seconds') ?? DEFAULT_RECONNECT_MS,
      )
      // The totals of what was read come first, then why top ended.
      if (failure) {
        if (text) process.stdout.write(`${text}\n`)
        throw failure
      }
      return { json: undefined, text, exitCode: 0 }
    },
  }),
  exporter: command({
    summary:
      "serves the server's WAL by table and index to Prometheus at /metrics, following it across lost connections and restarts (SIGINT or SIGTERM ends it)",
    schema: walMetricsOptionsSchema,
    skip: ['db', 'signal', 'intervalMs', 'labels', 'onError'],
    extra: [
      connection,
      option(
        'interval',
        `--interval S\n      seconds between two reads of the WAL (default: ${DEFAULT_EXPORTER_INTERVAL_MS / 1000})`,
      ),
      repeated(
        'label',
        '--label NAME=VALUE\n      a constant label on every series (e.g. --label server=db1); repeat for more',
      ),
    ],
    prepare: async (input, values) => exporterInput(input, values),
    async run(options) {
      await runExporter(options)
      return { json: undefined, text: undefined, exitCode: 0 }
    },
  }),
  audit: command({
    summary: "each index's write cost (measured on a scratch copy, rolled back) against how often it is scanned",
    schema: auditOptionsSchema,
    skip: NOT_ON_THE_COMMAND_LINE,
    extra: [
      ...BATCH_FLAGS,
      option(
        'traffic-seconds',
        "--traffic-seconds N\n      first observe the server's own traffic for N seconds: each index's WAL and scans over that window, and the verdicts judged on them",
      ),
    ],
    async prepare(input, values) {
      const batch = await batchInput(input, values)
      const durationMs = millisecondsFlag(values, 'traffic-seconds')
      if (durationMs === undefined) return batch
      return { ...batch, traffic: { durationMs } }
    },
    run: async (options) => plain(await auditIndexes(options)),
  }),
}

/** Fields inside the library's nested options, as the flags that set them. */
const NESTED_FLAGS: Record<string, string> = {
  'update.set': 'set',
  'update.rows': 'update-rows',
  'update.pick': 'pick',
  'delete.rows': 'delete-rows',
  'delete.pick': 'pick',
  'upsert.rows': 'upsert-rows',
  'upsert.conflict': 'conflict',
  'upsert.action': 'on-conflict',
  'upsert.set': 'set',
  'upsert.pick': 'pick',
}

/** --update-rows with --set, --delete-rows, or --upsert-rows, as the library's update, delete or upsert batch. */
function writeBatch(values: Values): Record<string, unknown> {
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
async function costInput(values: Values): Promise<CostInput> {
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
function suggested(cost: Parameters<typeof suggestBudget>[0], values: Values): Outcome {
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

function budgetFrom(values: Values): WalBudget | undefined {
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

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((name) => name.length)) + 2
  return [
    'walcost: what PostgreSQL inserts really write to WAL',
    '',
    `usage: walcost <${Object.keys(commands).join('|')}> [options]`,
    '       walcost <command> --help',
    '       walcost --version',
    '',
    ...Object.entries(commands).map(([name, command]) => `  ${name.padEnd(width)}${command.summary}`),
  ].join('\n')
}

const flagsOf = (command: Command) => flagsFromSchema(command.schema, command.skip)

function commandHelp(name: string, command: Command): string {
  const negatable = flagsOf(command).filter((flag) => flag.kind === 'boolean')
  return [
    `usage: walcost ${name}${command.positionals ? ` ${command.positionals.split('\n')[0]}` : ''} [options]${command.trailing ? ` [${command.trailing.split('\n')[0]}]` : ''}`,
    '',
    command.summary,
    '',
    ...command.extra.map(([, , help]) => `  ${help}`),
    ...flagsOf(command).map((flag) => `  ${flag.help}`),
    ...(negatable.length > 0 ? [`  --no-${negatable[0]?.flag} (and so on)\n      turn a yes/no option off`] : []),
    ...(command.trailing ? [`  ${command.trailing}`] : []),
    ...(command.positionals ? [`  ${command.positionals}`] : []),
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

/** A long reading's progress on the terminal, in place: files and bytes done, and the rate. */
function progressLine(): (progress: ArchiveProgress) => void {
  const began = performance.now()
  return ({ files, filesDone, bytesDone }) => {
    const seconds = Math.max(performance.now() - began, 1) / 1000
    process.stderr.write(
      `\rwalcost inspect: ${filesDone} of ${files} files, ${size(bytesDone)} read, ${size(bytesDone / seconds)}/s `,
    )
  }
}

/** A connection string fit to print: the password is never shown. */
function withoutPassword(url: string): string {
  return url.replace(/^(\w+:\/\/[^:@/]*):[^@/]*@/, '$1:***@').replace(/([?&]password=)[^&]*/, '$1***')
}

/** The package's version, from the package.json beside dist/ (or beside src/, run from source). */
function version(): string {
  const require = createRequire(import.meta.url)
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const manifest = require(path) as { name?: string; version: string }
      if (manifest.name === 'walcost') return manifest.version
    } catch {
      // Not there: the next one up.
    }
  }
  return 'unknown'
}

/** `--flag=true|false` for a yes/no option, as `--flag` or `--no-flag`: parseArgs takes no value for booleans. */
function normaliseBooleans(args: string[], booleans: Set<string>): string[] {
  return args.map((arg) => {
    const match = /^--([^=]+)=(true|false|yes|no|on|off|1|0)$/i.exec(arg)
    if (!match?.[1] || !match[2] || !booleans.has(match[1])) return arg
    return /^(true|yes|on|1)$/i.test(match[2]) ? `--${match[1]}` : `--no-${match[1]}`
  })
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-v') {
    console.log(version())
    return 0
  }
  if (name === undefined || name === '-h' || name === '--help') {
    console.log(usage())
    return name === undefined ? 2 : 0
  }
  if (name === 'help') {
    const about = rest[0] === undefined ? undefined : commands[rest[0]]
    console.log(about && rest[0] ? commandHelp(rest[0], about) : usage())
    return 0
  }
  const command = commands[name]
  if (!command) {
    console.error(
      `walcost: unknown command ${name}; the commands are ${Object.keys(commands).join(', ')} (walcost --help).`,
    )
    return 2
  }
  const flags = flagsOf(command)
  const booleans = flags.filter((flag) => flag.kind === 'boolean').map((flag) => flag.flag)
  const options: ParseArgsConfig['options'] = {
    ...parseArgsOptions(flags),
    ...Object.fromEntries(booleans.map((flag) => [`no-${flag}`, { type: 'boolean' as const }])),
    ...Object.fromEntries(command.extra.map(([flag, config]) => [flag, config])),
    help: { type: 'boolean', short: 'h' },
  }
  // After `--`, the words are the command to run, not walcost's flags.
  const dashes = command.trailing ? rest.indexOf('--') : -1
  let trailing = dashes >= 0 ? rest.slice(dashes + 1) : []
  let values: Values
  const args = joinNegativeValues(
    normaliseBooleans(dashes >= 0 ? rest.slice(0, dashes) : rest, new Set(booleans)),
    new Set(Object.keys(options).filter((flag) => options[flag]?.type === 'string')),
  )
  const refuse = (problem: string) => {
    console.error(`walcost ${name}: ${problem}${/[.?]$/.test(problem) ? '' : '.'} See walcost ${name} --help.`)
    return 2
  }
  try {
    const parsed = parseArgs({ args, options, strict: true, allowPositionals: !!command.positionals, tokens: true })
    const repeated = repeatedFlag(parsed.tokens, options)
    if (repeated) return refuse(repeated)
    values = parsed.values as Values
    if (command.positionals) trailing = parsed.positionals
  } catch (error) {
    return refuse(argumentProblem(error as Error, Object.keys(options), args))
  }
  if (values.help) {
    console.log(commandHelp(name, command))
    return 0
  }
  for (const flag of booleans) if (values[`no-${flag}`]) values[flag] = false
  const url = connectionUrl(typeof values.url === 'string' ? values.url : undefined)
  if (process.stderr.isTTY && name !== 'ceiling' && name !== 'inspect') {
    process.stderr.write(`walcost ${name}: on ${url ? withoutPassword(url) : 'an embedded PGlite'}...\n`)
  }
  const fieldFlags = [...flags, ...budgetFlags]
  try {
    const input = { ...inputFromFlags(flags, values), ...(url && name !== 'ceiling' ? { db: url } : {}) }
    const options = parseOptions(
      command.schema,
      command.prepare ? await command.prepare(input, values, trailing) : input,
    )
    const outcome = await command.run(options, values)
    const printed = values.json ? outcome.json : outcome.text
    if (printed !== undefined) console.log(values.json ? JSON.stringify(printed, null, 2) : printed)
    const drawn = outcome.result
    if (drawn && typeof values.vega === 'string') {
      await writeOutput('vega', values.vega, JSON.stringify(toVegaLite(drawn), null, 2))
    }
    if (drawn && typeof values.html === 'string') await writeOutput('html', values.html, toHtmlReport(drawn))
    return outcome.exitCode
  } catch (error) {
    if (!(error instanceof WalcostError)) throw error
    const extraFlag = command.extra.find(([option]) => option === error.field)?.[0] ?? NESTED_FLAGS[error.field ?? '']
    const flag = flagFor(fieldFlags, error.field) ?? (error.field === 'db' ? '--url' : extraFlag && `--${extraFlag}`)
    const message = inFlagWords(
      flag && error.code === 'INVALID_OPTIONS' && error.field
        ? error.message.replace(new RegExp(`^${error.field}\\b`), flag)
        : error.message,
      fieldFlags,
    )
    console.error(`walcost ${name}: ${error.code}: ${url ? message.replaceAll(url, withoutPassword(url)) : message}`)
    return 2
  }
}

async function writeOutput(option: string, path: string, content: string): Promise<void> {
  try {
    await writeFile(path, content)
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: cannot write ${path} (${(error as Error).message}).`, {
      field: option,
      cause: error,
    })
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(`walcost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    process.exitCode = 2
  },
)
