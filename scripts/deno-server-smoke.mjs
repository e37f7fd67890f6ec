// Every entry point that takes a connection string, once each, under the runtime that runs this
// script (scripts/run-notebook.mjs runs it under Deno, the notebooks' kernel). Each call is bounded:
// one that hangs fails the run with its name instead of holding it. The server is WALCOST_URL's.
import pg from 'pg'
import {
  auditIndexes,
  calibrateIngest,
  compareScenarios,
  estimateIngestCeiling,
  measureInsertCost,
  observeWal,
  watchWal,
} from '../dist/index.js'

const db = process.env.WALCOST_URL
if (!db) throw new Error('WALCOST_URL: the connection string of a PostgreSQL to measure on')
const CALL_BOUND_MS = 120_000

/** Runs `call` within the bound, prints what `describe` says of its result, and fails on a hang. */
async function step(name, call, describe) {
  const started = performance.now()
  let timer
  const bound = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${name} did not finish within ${CALL_BOUND_MS / 1000} s`)),
      CALL_BOUND_MS,
    )
  })
  try {
    const result = await Promise.race([call(), bound])
    console.log(`${name}: ${describe(result)} (${Math.round(performance.now() - started)} ms)`)
    return result
  } finally {
    clearTimeout(timer)
  }
}

const table = 'deno_smoke'
const setup = `drop table if exists ${table};
  create table ${table} (id bigint generated always as identity primary key, at timestamptz not null default now(), v int4 not null);
  create index ${table}_v on ${table} (v);
  insert into ${table} (v) select g % 997 from generate_series(1, 20000) g;
  analyze ${table}`

const measured = {}
for (const method of ['insert', 'multirow', 'copy']) {
  measured[method] = await step(
    `measureInsertCost (${method})`,
    () => measureInsertCost({ db, setup: method === 'insert' ? setup : undefined, table, count: 2_000, method }),
    (cost) => {
      if (cost.attribution !== 'wal') throw new Error(`${method}: attribution ${cost.attribution}, expected wal`)
      return `${cost.bytesPerRow.toFixed(1)} B/row, attribution ${cost.attribution}`
    },
  )
}

await step(
  'observeWal',
  () =>
    observeWal({
      db,
      run: async () => {
        const client = new pg.Client(db)
        await client.connect()
        try {
          await client.query(`insert into ${table} (v) select g from generate_series(1, 1000) g`)
        } finally {
          await client.end()
        }
      },
    }),
  (observation) => {
    const relation = observation.relations?.find((each) => each.name === table)
    if (!relation) throw new Error(`observeWal: ${table} is not among the relations that took WAL`)
    return `${observation.window.bytes} bytes, ${table} ${relation.bytes}`
  },
)

await step(
  'watchWal',
  () => watchWal({ db, intervalMs: 300, durationMs: 1_000 }),
  (totals) => `${totals.window.bytes} bytes over ${Math.round(totals.window.durationMs)} ms`,
)

await step(
  'compareScenarios',
  () => compareScenarios({ db, table, count: 1_000, sampleRows: 5_000 }),
  (comparison) => `${Object.keys(comparison.scenarios).length} scenarios, ${comparison.decomposition.summary}`,
)

await step(
  'auditIndexes',
  () => auditIndexes({ db, table, count: 1_000, sampleRows: 5_000 }),
  (audit) => `${audit.indexes.length} indexes`,
)

const calibration = await step(
  'calibrateIngest',
  () =>
    calibrateIngest({
      db,
      table,
      rowsPerCommit: [1, 100],
      connections: [1],
      secondsPerRun: 0.5,
      rounds: 1,
      sampleRows: 5_000,
    }),
  (result) => `${result.runs.length} runs, worst error ${(result.worstError * 100).toFixed(0)}%`,
)

const ceiling = estimateIngestCeiling(measured.copy, { storage: calibration.storage, rowsPerCommit: 100 })
console.log(`estimateIngestCeiling: ${Math.round(ceiling.maxRowsPerSec)} rows/s at most (${ceiling.bindingLimit})`)
