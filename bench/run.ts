// Benchmarks as ratios and counts measured in one run, on this machine: overhead, accuracy, memory,
// methods, embedded against real, observeWal against pg_walinspect, walcost top over time, walcost
// inspect against pg_waldump.
// `npm run bench` (full) or `npm run bench -- --quick` (what CI runs).
// Prints a table and writes bench/results.json.
import { writeFile } from 'node:fs/promises'
import pg from 'pg'
import { renderTable } from '../src/report/text.js'
import { startPostgres } from '../test/support/postgres-server.js'
import { accuracy } from './accuracy.js'
import { appTest } from './app-test.js'
import { ceiling } from './ceiling.js'
import { here, only, quick, results, rows } from './common.js'
import { crcRows } from './crc.js'
import { embeddedAgainstReal } from './embedded-against-real.js'
import { exporter } from './exporter.js'
import { inspect } from './inspect.js'
import { memory } from './memory.js'
import { methods } from './methods.js'
import { observe } from './observe.js'
import { overhead } from './overhead.js'
import { startupRows } from './startup.js'
import { topRate } from './top-rate.js'
import { watch } from './watch.js'

if (!only || only === 'inspect') await inspect()
if (!only || only === 'crc') for (const row of crcRows()) rows.push({ section: 'crc', ...row })
if (!only || only === 'startup')
  // Quick: one run of one command, so that the section cannot rot without costing CI half a minute.
  for (const row of await startupRows(quick ? 1 : 9, quick ? ['predict'] : undefined))
    rows.push({ section: 'startup', ...row })

const server = await startPostgres()
const client = new pg.Client({ connectionString: server.url })
await client.connect()
try {
  const sections = {
    appTest,
    overhead,
    accuracy,
    memory,
    methods,
    embeddedAgainstReal,
    observe,
    watch,
    exporter,
    topRate,
    ceiling,
  }
  for (const [name, section] of Object.entries(sections)) if (!only || only === name) await section(server.url, client)
} finally {
  await client.end()
  await server.stop()
}
results.rows = rows
await writeFile(`${here}results.json`, `${JSON.stringify(results, null, 2)}\n`)
console.log(
  renderTable(
    ['section', 'measure', 'value', 'target'],
    rows.map((row) => [row.section, row.measure, row.value, row.target]),
  ),
)
console.log(`\nwritten to bench/results.json${quick ? ' (quick)' : ''}`)
