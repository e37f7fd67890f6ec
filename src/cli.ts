import { parseArgs } from 'node:util'
import { fieldNotesExperiment } from './demo.js'
import { WalcostError } from './errors.js'
import { formatComparison } from './report/text.js'

const USAGE = `walcost: what PostgreSQL inserts really write to WAL

usage: walcost demo [--url URL] [--json] [--rows N] [--prefill N]

commands:
  demo   the field notes' experiment: 100,000 rows into a table of 500,000 with three indexes,
         right after a CHECKPOINT, again without one, and with the indexes dropped

options:
  --url URL      a PostgreSQL connection string (default: DATABASE_URL, else an embedded PGlite)
  --json         print the results as JSON
  --rows N       rows inserted in each run (default 100000)
  --prefill N    rows in the table before the runs (default 500000)
  -h, --help     this help`

function wholeNumber(option: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  const value = Number(text)
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: expected a whole number of rows, got ${text}.`, { field: option })
  }
  return value
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      json: { type: 'boolean', default: false },
      rows: { type: 'string' },
      prefill: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  const [command] = positionals
  if (values.help || command === undefined) {
    console.log(USAGE)
    return command === undefined && !values.help ? 2 : 0
  }
  if (command !== 'demo') {
    console.error(`walcost: unknown command ${command}\n\n${USAGE}`)
    return 2
  }
  const db = values.url ?? process.env.DATABASE_URL
  if (process.stderr.isTTY) process.stderr.write(`measuring on ${db ? 'the given server' : 'an embedded PGlite'}...\n`)
  const comparison = await fieldNotesExperiment({ db, batchRows: wholeNumber('rows', values.rows), prefillRows: wholeNumber('prefill', values.prefill) })
  console.log(values.json ? JSON.stringify(comparison, null, 2) : formatComparison(comparison))
  return 0
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code },
  (error: unknown) => {
    if (error instanceof WalcostError) console.error(`walcost: ${error.code}: ${error.message}`)
    else console.error(`walcost: ${error instanceof Error ? error.message : String(error)}`)
    process.exitCode = 2
  },
)
