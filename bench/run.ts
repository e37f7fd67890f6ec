// Benchmarks as ratios and counts measured in one run, on this machine: overhead, accuracy, memory,
// methods, embedded against real, observeWal against pg_walinspect, walcost top over time, walcost
// inspect against pg_waldump.
// `npm run bench` (full) or `npm run bench -- --quick` (what CI runs).
// Prints a table and writes bench/results.json.
import { execFile, spawn } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path, { join } from 'node:path'
import { promisify } from 'node:util'
import { MemoryFS, PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { counted, integer } from '../src/core/format.js'
import { openSession } from '../src/driver/open.js'
import { openCopy, readDataDir } from '../src/driver/pglite-template.js'
import { fieldNotesSetup, type InsertCost, measureInsertCost, observeWal, type WalObservation } from '../src/index.js'
import { renderTable } from '../src/report/text.js'
import { readRecords } from '../src/wal/attribution.js'
import { ObserveTally } from '../src/wal/observe-tally.js'
import { readServer, walLayout } from '../src/wal/server.js'
import { recordDebianWal } from '../test/support/debian.js'
import { GIN_TABLE, ginIngestCase, ginTableSetup } from '../test/support/gin-ingest.js'
import { ingestCases, MEASUREMENT_METHODS } from '../test/support/ingest-cases.js'
import { freePort, startPostgres } from '../test/support/postgres-server.js'
import { crcRows } from './crc.js'
import { startupRows } from './startup.js'

const run = promisify(execFile)
const quick = process.argv.includes('--quick')
/** `--only=overhead` (or appTest, exporter, accuracy, memory, methods, embeddedAgainstReal, observe, watch, topRate, ceiling, inspect, crc, startup): one section; BENCH_SIZES=100000,1000000 sets the overhead sizes. */
const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length)
const here = new URL('.', import.meta.url).pathname

const TABLE = `create table bench (time timestamptz not null, device_id int4 not null, metric_id int4 not null, value float8 not null, extra int8 not null);
  create index bench_time_idx on bench (time); create index bench_device_idx on bench (device_id, time); create index bench_metric_idx on bench (metric_id, time)`
const rowsSql = (
  from: number,
  count: number,
) => `insert into bench select timestamptz '2026-01-01' + i * interval '10 ms', (i::int8 * 7919 % 1000)::int4, i % 50, i * 0.001, i
  from generate_series(${from + 1}, ${from + count}) i`

interface Row {
  section: string
  measure: string
  value: string
  target: string
}
const rows: Row[] = []
const results: Record<string, unknown> = { quick, node: process.version, startedAt: new Date().toISOString() }
const ratio = (value: number) => `${value.toFixed(2)}x`

async function seconds<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const value = await work()
  return [value, (performance.now() - start) / 1000]
}

/** A fresh table of `prefill` rows, vacuumed: every repetition starts from the same table. */
async function freshTable(client: pg.Client, prefill: number) {
  await client.query('drop table if exists bench')
  await client.query(TABLE)
  await client.query(rowsSql(0, prefill))
  await client.query('vacuum analyze bench')
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? Number.NaN

/**
 * measureInsertCost against the same batch run plainly (in a transaction rolled back the same way),
 * on identical fresh tables: the median of the ratios of each pair, since one run on a shared
 * machine varies by more than the difference measured, and a pair's two runs share its state. Every
 * other pair runs the measurement first, so that neither side always follows the other.
 */
async function overheadOf(
  label: string,
  target: string,
  repetitions: number,
  fresh: () => Promise<void>,
  plain: () => Promise<unknown>,
  measured: () => Promise<InsertCost>,
) {
  const plainSeconds: number[] = []
  const measuredSeconds: number[] = []
  let records: number | null = null
  const runPlain = async () => {
    await fresh()
    plainSeconds.push((await seconds(plain))[1])
  }
  const runMeasured = async () => {
    await fresh()
    const [cost, time] = await seconds(measured)
    measuredSeconds.push(time)
    records = cost.walRecords
  }
  for (let i = 0; i < repetitions; i++) {
    if (i % 2 === 0) {
      await runPlain()
      await runMeasured()
    } else {
      await runMeasured()
      await runPlain()
    }
  }
  const value = median(measuredSeconds.map((seconds, i) => seconds / (plainSeconds[i] ?? Number.NaN)))
  rows.push({ section: 'overhead', measure: label, value: ratio(value), target })
  return { plainSeconds, measuredSeconds, ratio: value, records }
}

/** The batch of `size` rows run plainly, in a transaction rolled back as the measurement's is. */
const plainInsert = (run: (sql: string) => Promise<unknown>, size: number) => async () => {
  await run('begin')
  await run(rowsSql(100_000, size))
  await run('rollback')
}

/**
 * Each comparison gives both sides the same kind of connection: a warm Pool (an application's),
 * or a connection string, where the plain insert connects and disconnects too, as the measurement
 * does (it opens two sessions, one to read the WAL while the batch runs).
 */
async function overhead(url: string, client: pg.Client) {
  const sizes = quick
    ? [10_000]
    : process.env.BENCH_SIZES
      ? process.env.BENCH_SIZES.split(',').map(Number)
      : [100_000, 1_000_000]
  const target = (value: string) => (quick ? '-' : value)
  // Pairs vary by 20% on a shared 2-core machine: 15 left the median 4% apart from run to run.
  const repetitions = (size: number) => (quick ? 1 : size >= 1_000_000 ? 3 : 31)
  const fresh = () => freshTable(client, 100_000)
  const entries = []
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  try {
    for (const size of sizes) {
      const entry = await overheadOf(
        `measureInsertCost / plain insert, ${size.toLocaleString('en-US')} rows, PostgreSQL 18, a Pool`,
        target('<= 1.10'),
        repetitions(size),
        fresh,
        async () => {
          const pooled = await pool.connect()
          try {
            await plainInsert((sql) => pooled.query(sql), size)()
          } finally {
            pooled.release()
          }
        },
        () => measureInsertCost({ db: pool, table: 'bench', sql: rowsSql(100_000, size) }),
      )
      entries.push({ backend: 'postgres', connection: 'pool', rows: size, ...entry })
    }
  } finally {
    await pool.end()
  }
  const size = sizes[0] ?? 10_000
  const entry = await overheadOf(
    `the same, ${size.toLocaleString('en-US')} rows, a connection string`,
    target('<= 1.10'),
    repetitions(size),
    fresh,
    async () => {
      const connected = new pg.Client({ connectionString: url })
      await connected.connect()
      try {
        await plainInsert((sql) => connected.query(sql), size)()
      } finally {
        await connected.end()
      }
    },
    () => measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, size) }),
  )
  entries.push({ backend: 'postgres', connection: 'url', rows: size, ...entry })
  const embeddedSize = quick ? 10_000 : 100_000
  const embedded = await PGlite.create()
  try {
    const entry = await overheadOf(
      `the same on PGlite, ${embeddedSize.toLocaleString('en-US')} rows`,
      target('<= 1.15'),
      repetitions(embeddedSize),
      async () => {
        await embedded.exec(`drop table if exists bench; ${TABLE}; ${rowsSql(0, 100_000)}`)
        await embedded.exec('vacuum analyze bench')
      },
      plainInsert((sql) => embedded.exec(sql), embeddedSize),
      () => measureInsertCost({ db: embedded, table: 'bench', sql: rowsSql(100_000, embeddedSize) }),
    )
    entries.push({ backend: 'pglite', rows: embeddedSize, ...entry })
  } finally {
    await embedded.close()
  }
  results.overhead = entries
}

async function accuracy(url: string, client: pg.Client) {
  const repetitions = quick ? 3 : 5
  const costs: InsertCost[] = []
  for (let i = 0; i < repetitions; i++) {
    await freshTable(client, 100_000)
    // Every run starts right after a checkpoint of its own, so that none lands in one of them only
    // (the WAL of the sections before can force one): its images would change that run's bytes.
    await client.query('checkpoint')
    costs.push(await measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, quick ? 10_000 : 100_000) }))
  }
  const spread = (values: number[]) => Math.max(...values) - Math.min(...values)
  const records = costs.map((cost) => cost.walRecords ?? 0)
  const recordBytes = costs.map((cost) => cost.breakdown!.heapBytes + cost.breakdown!.indexBytes)
  const otherShare = costs.map((cost) => cost.breakdown!.otherBytes / cost.walBytes)
  // Attributed runs (breakdown! above): their noise is known.
  const noiseShare = costs.map((cost) => (cost.noiseBytes as number) / cost.windowBytes)
  results.accuracy = {
    repetitions,
    records,
    recordBytes,
    bytesPerRow: costs.map((cost) => cost.bytesPerRow),
    fpiCount: costs.map((cost) => cost.fpiCount),
    otherShare,
    noiseShare,
  }
  rows.push({
    section: 'accuracy',
    measure: `spread of WAL records over ${repetitions} runs`,
    value: String(spread(records)),
    target: '0',
  })
  rows.push({
    section: 'accuracy',
    measure: `spread of heap+index record bytes over ${repetitions} runs`,
    value: String(spread(recordBytes)),
    target: '0',
  })
  rows.push({
    section: 'accuracy',
    measure: 'otherBytes / walBytes (alignment, page headers)',
    value: `${(100 * Math.max(...otherShare)).toFixed(2)}%`,
    target: 'small',
  })
  rows.push({
    section: 'accuracy',
    measure: 'noiseBytes / windowBytes on an idle server',
    value: `${(100 * Math.max(...noiseShare)).toFixed(3)}%`,
    target: '~0',
  })
}

/** Peak RSS of a child process streaming `count` rows through COPY on `backend`. */
async function peakRss(backend: 'pg' | 'pglite', count: number, url: string): Promise<number> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', `${here}copy-rss.ts`, backend, String(count), url],
    { maxBuffer: 1024 * 1024 },
  )
  return Number(stdout.trim())
}

async function memory(url: string, client: pg.Client) {
  const [small, large] = quick ? [20_000, 200_000] : [100_000, 2_000_000]
  const entries: Record<string, unknown> = {}
  for (const backend of ['pg', 'pglite'] as const) {
    if (backend === 'pg') await freshTable(client, 0)
    const low = await peakRss(backend, small, url)
    if (backend === 'pg') await freshTable(client, 0)
    const high = await peakRss(backend, large, url)
    entries[backend] = {
      smallRows: small,
      largeRows: large,
      smallRssMB: low / 1e6,
      largeRssMB: high / 1e6,
      ratio: high / low,
    }
    rows.push({
      section: 'memory',
      measure: `peak RSS, COPY of ${large.toLocaleString('en-US')} vs ${small.toLocaleString('en-US')} streamed rows (${backend})`,
      value: ratio(high / low),
      target: backend === 'pg' ? '~1 (flat)' : 'PGlite keeps the database and its WAL in this process',
    })
  }
  results.memory = entries
}

async function methods(url: string, client: pg.Client) {
  const count = quick ? 5_000 : 50_000
  const data = Array.from({ length: count }, (_, i) => ({
    time: new Date(Date.UTC(2027, 0, 1) + i * 10),
    device_id: i % 1000,
    metric_id: i % 50,
    value: i / 3,
    extra: i,
  }))
  const entries: Record<string, number> = {}
  for (const method of ['insert', 'multirow', 'copy'] as const) {
    await freshTable(client, 10_000)
    const [, elapsed] = await seconds(() => measureInsertCost({ db: url, table: 'bench', rows: data, method }))
    entries[`walcost ${method}`] = count / elapsed
  }
  await freshTable(client, 10_000)
  const [, plainInsert] = await seconds(async () => {
    await client.query('begin')
    for (const row of data)
      await client.query('insert into bench values ($1, $2, $3, $4, $5)', [
        row.time,
        row.device_id,
        row.metric_id,
        row.value,
        row.extra,
      ])
    await client.query('rollback')
  })
  entries['plain pg insert'] = count / plainInsert
  try {
    await freshTable(client, 10_000)
    const csv = data
      .map((row) => `${row.time.toISOString()},${row.device_id},${row.metric_id},${row.value},${row.extra}`)
      .join('\n')
    const [, psql] = await seconds(
      () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn('psql', [url, '-q', '-c', '\\copy bench from stdin with (format csv)'], {
            stdio: ['pipe', 'ignore', 'inherit'],
          })
          child.on('error', reject)
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited ${code}`))))
          child.stdin.end(csv)
        }),
    )
    entries['psql \\copy'] = count / psql
  } catch {
    entries['psql \\copy'] = Number.NaN
  }
  results.methods = { rows: count, rowsPerSecond: entries }
  for (const [name, rate] of Object.entries(entries)) {
    rows.push({
      section: 'methods',
      measure: `${name}, rows/s relative to walcost COPY`,
      value: Number.isNaN(rate) ? 'psql not found' : ratio(rate / entries['walcost copy']!),
      target: '-',
    })
  }
}

async function embeddedAgainstReal(url: string, client: pg.Client) {
  const count = quick ? 10_000 : 100_000
  const setup = `${TABLE}; ${rowsSql(0, 100_000)}`
  await freshTable(client, 100_000)
  const [real, realSeconds] = await seconds(() =>
    measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, count) }),
  )
  const [embedded, embeddedSeconds] = await seconds(() =>
    measureInsertCost({ setup: `${setup}; analyze bench`, table: 'bench', sql: rowsSql(100_000, count) }),
  )
  const same = (pick: (cost: InsertCost) => unknown) => JSON.stringify(pick(real)) === JSON.stringify(pick(embedded))
  results.embeddedAgainstReal = {
    rows: count,
    real: {
      records: real.walRecords,
      heapBytes: real.breakdown?.heapBytes,
      indexBytes: real.breakdown?.indexBytes,
      seconds: realSeconds,
    },
    embedded: {
      records: embedded.walRecords,
      heapBytes: embedded.breakdown?.heapBytes,
      indexBytes: embedded.breakdown?.indexBytes,
      seconds: embeddedSeconds,
    },
  }
  rows.push({
    section: 'embedded vs real',
    measure: 'same WAL records',
    value: same((cost) => cost.walRecords) ? 'yes' : `no: ${real.walRecords} vs ${embedded.walRecords}`,
    target: 'yes',
  })
  rows.push({
    section: 'embedded vs real',
    measure: 'same heap and index record bytes',
    value: same((cost) => [cost.breakdown?.heapBytes, cost.breakdown?.indexBytes]) ? 'yes' : 'no',
    target: 'yes',
  })
  rows.push({
    section: 'embedded vs real',
    measure: 'PGlite time / PostgreSQL 18 time (prefill included on PGlite)',
    value: ratio(embeddedSeconds / realSeconds),
    target: '-',
  })
}

/**
 * What a measurement on the embedded default costs an app test, against the insert itself: the
 * README's orders table, a repository function inserting 1,000 rows one statement each through the
 * handle \`run\` receives. Cold is the process's first call (it initialises the embedded database
 * walcost copies for every later one), warm the median of ten more, plain the same function on an
 * open PGlite whose schema is ready, in a transaction rolled back as the measurement's is.
 */
async function appTest() {
  const setup = `create table orders (id int8 generated always as identity primary key, customer_id int4 not null,
      placed_at timestamptz not null default now(), total numeric(12,2) not null, note text);
    create index orders_customer_idx on orders (customer_id, placed_at)`
  const orders = Array.from({ length: 1_000 }, (_, i) => ({ customer: i % 300, total: (i % 500) + 0.5 }))
  type Queryable = { query(sql: string, params: unknown[]): Promise<unknown> }
  const insertOrders = async (client: Queryable) => {
    for (const order of orders) {
      await client.query('insert into orders (customer_id, total) values ($1, $2)', [order.customer, order.total])
    }
  }
  const measure = () => measureInsertCost({ setup, table: 'orders', run: (db) => insertOrders(db as Queryable) })
  const ms = (value: number) => `${Math.round(value * 1000).toLocaleString('en-US')} ms`
  const [, cold] = await seconds(measure)
  const warm: number[] = []
  for (let i = 0; i < 10; i++) warm.push((await seconds(measure))[1])
  // A COPY batch of 10,000 such rows: walcost's measurement of it, and PGlite's own COPY of them.
  const copyRows = Array.from({ length: 10_000 }, (_, i) => ({ customer_id: i % 300, total: (i % 500) + 0.5 }))
  const measureCopy = () => measureInsertCost({ setup, table: 'orders', rows: copyRows, method: 'copy' })
  const warmCopy: number[] = []
  for (let i = 0; i < 10; i++) warmCopy.push((await seconds(measureCopy))[1])
  const csv = new Blob([copyRows.map((row) => `${row.customer_id},${row.total}\n`).join('')])
  const open = await PGlite.create()
  const plain: number[] = []
  const plainCopy: number[] = []
  const rolledBack = async (work: () => Promise<unknown>) =>
    (
      await seconds(async () => {
        await open.exec('begin')
        await work()
        await open.exec('rollback')
      })
    )[1]
  try {
    await open.exec(setup)
    for (let i = 0; i < 10; i++) {
      plain.push(await rolledBack(() => insertOrders(open)))
      plainCopy.push(
        await rolledBack(() =>
          open.query(`copy orders (customer_id, total) from '/dev/blob' with (format csv)`, [], { blob: csv }),
        ),
      )
    }
  } finally {
    await open.close()
  }
  // A copy's opening, by PGlite's loadDataDir (walcost's way until 0.5.17's internals were used)
  // and by writing the files into the new instance: the same template, alternately, five each.
  const template = await PGlite.create({ postgresqlconf: ["shared_buffers = '16MB'"] })
  await template.exec(setup)
  const files = await readDataDir(template)
  const dumped = await template.dumpDataDir('none')
  await template.close()
  const opens = { loadDataDir: [] as number[], written: [] as number[] }
  for (let i = 0; i < 5; i++) {
    const [loaded, byLoad] = await seconds(() => PGlite.create({ loadDataDir: dumped }))
    await loaded.close()
    const [written, byWriting] = await seconds(() => openCopy({ PGlite, MemoryFS }, files))
    await written.close()
    opens.loadDataDir.push(byLoad)
    opens.written.push(byWriting)
  }
  rows.push({
    section: 'app test',
    measure:
      'opening a copy of the database, by loadDataDir / by writing its files into the new instance, medians of 5',
    value: `${ms(median(opens.loadDataDir))} / ${ms(median(opens.written))}`,
    target: '-',
  })
  results.appTest = { cold, warm, plain, warmCopy, plainCopy, opens }
  rows.push({
    section: 'app test',
    measure: 'cold first call (1,000 orders by a repository function)',
    value: ms(cold),
    target: '-',
  })
  rows.push({ section: 'app test', measure: 'warm call, median of 10', value: ms(median(warm)), target: '-' })
  rows.push({
    section: 'app test',
    measure: 'plain insert on an open PGlite, median of 10',
    value: ms(median(plain)),
    target: '-',
  })
  rows.push({
    section: 'app test',
    measure: 'warm / plain',
    value: ratio(median(warm) / median(plain)),
    target: quick ? '-' : '<= 1.5x',
  })
  rows.push({
    section: 'app test',
    measure: `10,000 rows as one COPY: warm measurement / PGlite's own COPY, medians of 10 (${ms(median(warmCopy))} / ${ms(median(plainCopy))})`,
    value: ratio(median(warmCopy) / median(plainCopy)),
    target: quick ? '-' : '<= 2.0x',
  })
}

/**
 * observeWal's reading of a pgbench window (our reader and tally, after the fact, as a window is
 * read when no second session followed it) against pg_get_wal_block_info grouped by relation file,
 * on the same window, alternately; medians of the times. The window is a fixed number of
 * transactions, not of seconds: on a loaded machine a timed run writes less WAL, and the ratio
 * depends on the window's size (each side has a fixed cost).
 */
async function observe(url: string, client: pg.Client) {
  try {
    await run('pgbench', ['-i', '-q', '-s', quick ? '1' : '10', url])
  } catch {
    rows.push({ section: 'observe', measure: 'pgbench', value: 'pgbench not found', target: '-' })
    return
  }
  await client.query('create extension if not exists pg_walinspect')
  const observation = await observeWal({
    db: url,
    run: () => run('pgbench', ['-c', '4', '-t', quick ? '500' : '9000', url]),
  })
  const start = { lsn: observation.window.startLsn, bytes: 0 }
  const end = { lsn: observation.window.endLsn, bytes: 0 }
  const [distance] = (
    await client.query<{ start: string; end: string }>(
      `select ($1::pg_lsn - '0/0'::pg_lsn)::text as start, ($2::pg_lsn - '0/0'::pg_lsn)::text as end`,
      [start.lsn, end.lsn],
    )
  ).rows
  start.bytes = Number(distance?.start)
  end.bytes = Number(distance?.end)
  const session = await openSession(url, {
    connectTimeoutMs: 10_000,
    lockTimeoutMs: 10_000,
    statementTimeoutMs: undefined,
  })
  const ours: number[] = []
  const blockInfo: number[] = []
  try {
    const layout = walLayout(await readServer(session))
    // The first round warms both up (the JIT here, the page cache there) and is not counted.
    for (let i = 0; i <= (quick ? 1 : 9); i++) {
      const [, read] = await seconds(async () => {
        const tally = new ObserveTally(layout)
        await readRecords(session, layout, start, end, tally.onRecord)
        return tally.summary(end.bytes - start.bytes)
      })
      ours.push(read)
      const [, grouped] = await seconds(() =>
        client.query(
          `select reltablespace, reldatabase, relfilenode, count(*), sum(record_length), sum(block_fpi_length)
             from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) group by 1, 2, 3`,
          [start.lsn, end.lsn],
        ),
      )
      blockInfo.push(grouped)
    }
    ours.shift()
    blockInfo.shift()
  } finally {
    await session.close()
  }
  const value = median(blockInfo) / median(ours)
  results.observe = {
    windowBytes: observation.window.bytes,
    records: observation.window.records,
    relations: observation.relations?.length ?? null,
    oursSeconds: ours,
    blockInfoSeconds: blockInfo,
    ratio: value,
  }
  rows.push({
    section: 'observe',
    measure: `pg_get_wal_block_info grouped by relfilenode / observeWal's reading, a pgbench window of ${(observation.window.bytes / 1e6).toFixed(1)} MB (${quick ? '2,000' : '36,000'} transactions), medians of ${ours.length} reads each`,
    value: ratio(value),
    target: quick ? '-' : '>= 3x',
  })
}

/** A process's resident set in MB, from /proc (Linux); null where it cannot be read. */
async function residentMB(pid: number): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null)
  const kB = status?.match(/^VmRSS:\s+(\d+) kB/m)?.[1]
  return kB === undefined ? null : Number(kB) / 1000
}

/**
 * The live heap after each full collection of a process started with --trace-gc, from the lines
 * it prints on stdout: what the process holds, whatever RSS keeps. Other lines go to `onLine`.
 */
function liveHeapOf(
  stdout: NodeJS.ReadableStream,
  began: number,
  onLine: (line: string, atS: number) => void = () => undefined,
): Array<{ atS: number; heapMB: number }> {
  const liveHeap: Array<{ atS: number; heapMB: number }> = []
  let pending = ''
  stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      const atS = (performance.now() - began) / 1000
      const collected = line.match(/Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(/)?.[1]
      if (collected !== undefined) liveHeap.push({ atS, heapMB: Number(collected) })
      else onLine(line, atS)
    }
  })
  return liveHeap
}

/** Samples of a run of `seconds` in the `count` equal parts of its time (the last part takes any later ones). */
const partOf = <T extends { atS: number }>(samples: T[], seconds: number, count: number, i: number) =>
  samples.filter((sample) => Math.min(count - 1, Math.floor((sample.atS * count) / seconds)) === i)

/** The bench row of a reader's live heap after full collections, each tenth's median: flat is the target. */
function liveHeapRow(
  section: string,
  reader: string,
  liveHeap: Array<{ atS: number; heapMB: number }>,
  seconds: number,
) {
  return {
    section,
    measure: `${reader}'s live heap after full collections, each tenth's median (MB)`,
    value: tenthsMB(liveHeap, seconds, (sample) => sample.heapMB, median),
    target: quick ? '-' : 'flat',
  }
}

/** `pick` of each tenth of the run's samples, in whole MB ('-' for a tenth with none). */
function tenthsMB<T extends { atS: number }>(
  samples: T[],
  seconds: number,
  value: (sample: T) => number,
  pick: (values: number[]) => number,
): string {
  return Array.from({ length: 10 }, (_, i) => {
    const values = partOf(samples, seconds, 10, i).map(value)
    return values.length === 0 ? '-' : pick(values).toFixed(0)
  }).join(' ')
}

/**
 * pgbench initialised and then running from four connections for `seconds`, as the long-running
 * readers' benchmarks load a server; null (and a row saying so) where pgbench is not installed.
 * Without waiting for each commit's flush, pgbench writes several times the WAL a second on this
 * machine.
 */
async function pgbenchLoad(url: string, section: string, seconds: number) {
  try {
    await run('pgbench', ['-i', '-q', '-s', quick ? '1' : '10', url])
  } catch {
    rows.push({ section, measure: 'pgbench', value: 'pgbench not found', target: '-' })
    return null
  }
  const load = run('pgbench', ['-c', '4', '-j', '2', '-T', String(seconds), url], {
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, PGOPTIONS: '-c synchronous_commit=off' },
  })
  load.catch(() => undefined)
  // In an object: an async function's promise would take on pgbench's own and wait for its end, so
  // that the readers would start on an idle server.
  return { finished: load }
}

/**
 * `walcost top` itself over a long watch of a server under pgbench (10 minutes; 8 s with --quick):
 * the CLI's RSS sampled from /proc each second, its lows early against late, and over the run; and
 * whether its reading kept up (each interval printed one interval after the one before, not later
 * and later). Flat means a tally per interval, nothing kept per interval.
 */
async function watch(url: string) {
  const seconds = quick ? 8 : 600
  const load = await pgbenchLoad(url, 'watch', seconds + 6)
  if (!load) return
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  const top = spawn(
    process.execPath,
    [
      // Each full collection's line says the live heap after it: what is held, whatever RSS keeps.
      '--trace-gc',
      '--import',
      'tsx',
      `${here}../src/cli/cli.ts`,
      'top',
      '--url',
      url,
      '--json',
      '--interval',
      '1',
      '--seconds',
      String(seconds),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const began = performance.now()
  const rss: Array<{ atS: number; rssMB: number }> = []
  const printedAtS: number[] = []
  let walBytes = 0
  let stderr = ''
  const liveHeap = liveHeapOf(top.stdout, began, (line, atS) => {
    if (!line.startsWith('{')) return
    walBytes += (JSON.parse(line) as WalObservation).window.bytes
    printedAtS.push(atS)
  })
  top.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => top.once('close', resolve))
  const sampler = setInterval(() => {
    void residentMB(top.pid ?? 0).then(
      (mb) => mb !== null && rss.push({ atS: (performance.now() - began) / 1000, rssMB: mb }),
    )
  }, 1_000)
  const code = await exited
  clearInterval(sampler)
  await load.finished.catch(() => undefined)
  if (code !== 0) throw new Error(`walcost top exited with ${code}: ${stderr}`)
  if (rss.length < 4) {
    rows.push({ section: 'watch', measure: "walcost top's RSS", value: 'unavailable (no /proc)', target: '-' })
    return
  }
  // RSS saws with V8's collections and keeps what V8 has not given back; the live heap after each
  // full collection is what is held. The first quarter loads modules and warms the JIT: the second
  // is compared with the last. Tenths and quarters are of the run's time.
  const heapOf = (i: number) => partOf(liveHeap, seconds, 4, i).map((sample) => sample.heapMB)
  const [early, late] = [median(heapOf(1)), median(heapOf(3))]
  const walMB = walBytes / 1e6
  const watchedS = printedAtS.length
  // How much later than one interval after the first the last interval was printed.
  const fellBehindS = (printedAtS.at(-1) ?? 0) - (printedAtS[0] ?? 0) - (printedAtS.length - 1)
  results.watch = {
    seconds,
    intervals: watchedS,
    walMB,
    earlyHeapMB: early,
    lateHeapMB: late,
    fellBehindS,
    rss,
    liveHeap,
  }
  const over = `${seconds} s of 1 s intervals under pgbench -c 4 (synchronous_commit off), ${walMB.toFixed(0)} MB of WAL (${(walMB / seconds).toFixed(1)} MB/s)`
  const rssOf = (sample: (typeof rss)[number]) => sample.rssMB
  rows.push(
    {
      section: 'watch',
      measure: `walcost top's live heap after each full collection, the last quarter's median / the second quarter's, ${over}`,
      value: Number.isNaN(early) || Number.isNaN(late) ? 'no full collection in a quarter' : ratio(late / early),
      target: quick ? '-' : '~1 (flat)',
    },
    liveHeapRow('watch', 'walcost top', liveHeap, seconds),
    {
      section: 'watch',
      measure: "walcost top's RSS over the run, each tenth's lowest (MB)",
      value: tenthsMB(rss, seconds, rssOf, (values) => Math.min(...values)),
      target: '-',
    },
    {
      section: 'watch',
      measure: "walcost top's RSS over the run, each tenth's highest (MB)",
      value: tenthsMB(rss, seconds, rssOf, (values) => Math.max(...values)),
      target: '-',
    },
    {
      section: 'watch',
      measure: `walcost top: intervals printed; how much later the last came than one a second after the first`,
      value: `${watchedS} of ${seconds}; ${fellBehindS.toFixed(1)} s`,
      target: quick ? '-' : `${seconds}; ~0 s (kept up)`,
    },
  )
}

/**
 * `walcost exporter` kept running under pgbench (30 minutes; 10 s with --quick), scraped as
 * Prometheus would: its RSS early and late (each the median of a tenth of the run), and its CPU
 * a megabyte of WAL read, from its own process_cpu_seconds_total and walcost_wal_read_lsn_bytes
 * between the first scrape and the last.
 */
async function exporter(url: string) {
  const seconds = quick ? 10 : Number(process.env.BENCH_EXPORTER_SECONDS ?? 1_800)
  const load = await pgbenchLoad(url, 'exporter', seconds + 10)
  if (!load) return
  const port = await freePort()
  const served = spawn(
    process.execPath,
    [
      // Each full collection's line says the live heap after it: what is held, whatever RSS keeps.
      '--trace-gc',
      '--import',
      'tsx',
      `${here}../src/cli/cli.ts`,
      'exporter',
      '--url',
      url,
      '--listen',
      `127.0.0.1:${port}`,
      '--interval',
      '1',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  const liveHeap = liveHeapOf(served.stdout, performance.now())
  let stderr = ''
  served.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => served.once('close', resolve))
  const scrape = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(text)?.[1])
    return { cpuS: value('process_cpu_seconds_total'), readBytes: value('walcost_wal_read_lsn_bytes') }
  }
  let first: Awaited<ReturnType<typeof scrape>> | null = null
  for (let waited = 0; !first || Number.isNaN(first.readBytes); waited += 500) {
    if (waited > 60_000) throw new Error(`walcost exporter never served its metrics: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
    first = await scrape().catch(() => null)
  }
  const began = performance.now()
  const rss: Array<{ atS: number; rssMB: number }> = []
  const sampler = setInterval(
    () => {
      void residentMB(served.pid ?? 0).then(
        (mb) => mb !== null && rss.push({ atS: (performance.now() - began) / 1000, rssMB: mb }),
      )
    },
    quick ? 500 : 5_000,
  )
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  clearInterval(sampler)
  const last = await scrape()
  served.kill('SIGTERM')
  const code = await exited
  await load.finished.catch(() => undefined)
  if (code !== 0) throw new Error(`walcost exporter exited with ${code} on SIGTERM: ${stderr}`)
  const tenth = (i: number) => median(partOf(rss, seconds, 10, i).map((sample) => sample.rssMB))
  const [early, late] = [tenth(1), tenth(9)]
  const walMB = (last.readBytes - first.readBytes) / 1e6
  const cpuPerMB = ((last.cpuS - first.cpuS) * 1000) / walMB
  results.exporter = { seconds, walMB, cpuS: last.cpuS - first.cpuS, rss, liveHeap }
  const over = `${Math.round(seconds / 60) || seconds} ${seconds >= 60 ? 'min' : 's'} under pgbench -c 4 (synchronous_commit off), ${walMB.toFixed(0)} MB of WAL read`
  rows.push(
    {
      section: 'exporter',
      measure: `walcost exporter's RSS, early (second tenth's median) and late (last tenth's), ${over}`,
      value: `${early.toFixed(0)} MB, ${late.toFixed(0)} MB`,
      target: quick ? '-' : 'flat',
    },
    liveHeapRow('exporter', 'walcost exporter', liveHeap, seconds),
    {
      section: 'exporter',
      measure: "walcost exporter's RSS, each tenth's median (MB)",
      value: tenthsMB(rss, seconds, (sample) => sample.rssMB, median),
      target: '-',
    },
    {
      section: 'exporter',
      measure: "walcost exporter's CPU a MB of WAL read (its process_cpu_seconds_total / walcost_wal_read_lsn_bytes)",
      value: `${cpuPerMB.toFixed(1)} ms/MB`,
      target: '-',
    },
  )
}

/**
 * Sessions inserting wide rows in bulk, committed without waiting for their flush, on loopback, until
 * `untilMs` (performance.now()) or `statements` each: as much WAL a second as this machine writes.
 * The payload is stored plain (no compression, no TOAST), so that each row is its 1.8 kB in the WAL.
 */
async function wideInserts(url: string, sessions: number, untilMs: number, statements: number) {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query('drop table if exists wide')
  await admin.query(
    'create table wide (id int8, payload text); alter table wide alter column payload set storage plain',
  )
  await admin.end()
  const session = async () => {
    const writer = new pg.Client({ connectionString: url, options: '-c synchronous_commit=off' })
    await writer.connect()
    try {
      for (let i = 0; i < statements && performance.now() < untilMs; i++)
        await writer.query(`insert into wide select g, repeat('x', 1800) from generate_series(1, 2000) g`)
    } finally {
      await writer.end()
    }
  }
  await Promise.all(Array.from({ length: sessions }, session))
}

/**
 * `walcost top` (the CLI as a user runs it: --json, 1 s intervals) over a server writing WAL as fast
 * as wideInserts makes it (the target: 50 MB/s on 2 cores), 30 s (8 with --quick). As each interval
 * is printed, a third connection reads the server's insert position: how far behind it that
 * interval ended is top's lag, one interval plus its reading (growing if the reading cannot keep
 * up). The intervals must follow each other and add up to the LSN distance they span.
 */
async function topRate(url: string, client: pg.Client) {
  const seconds = quick ? 8 : 30
  const insertLsn = async () =>
    (await client.query<{ bytes: string }>(`select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes`))
      .rows[0]!.bytes
  // The load runs from 2 s before top starts until 2 s after it ends, 10,000 statements at the most.
  const loadEnds = performance.now() + (seconds + 4) * 1000
  const loadStart = { at: performance.now(), bytes: Number(await insertLsn()) }
  const load = wideInserts(url, 3, loadEnds, 10_000)
  load.catch(() => undefined)
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const cli = new URL('../dist/cli.js', import.meta.url).pathname
  const top = spawn(
    process.execPath,
    [cli, 'top', '--url', url, '--json', '--interval', '1', '--seconds', String(seconds)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const began = performance.now()
  const intervals: WalObservation[] = []
  const lagBytes: Promise<number>[] = []
  const printedAtS: number[] = []
  let pending = ''
  let stderr = ''
  top.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const interval = JSON.parse(pending.slice(0, newline)) as WalObservation
      pending = pending.slice(newline + 1)
      printedAtS.push((performance.now() - began) / 1000)
      intervals.push(interval)
      lagBytes.push(
        client
          .query<{ lag: string }>(`select (pg_current_wal_insert_lsn() - $1::pg_lsn)::text as lag`, [
            interval.window.endLsn,
          ])
          .then((result) => Number(result.rows[0]!.lag)),
      )
    }
  })
  top.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const code = await new Promise<number | null>((resolve) => top.once('close', resolve))
  await load
  const loadEnd = { at: performance.now(), bytes: Number(await insertLsn()) }
  await client.query('drop table wide')
  if (code !== 0) throw new Error(`walcost top exited with ${code}: ${stderr}`)
  const lagsMB = (await Promise.all(lagBytes)).map((bytes) => bytes / 1e6)
  const first = intervals[0]!
  const last = intervals.at(-1)!
  const [span] = (
    await client.query<{ bytes: string }>(`select ($2::pg_lsn - $1::pg_lsn)::text as bytes`, [
      first.window.startLsn,
      last.window.endLsn,
    ])
  ).rows
  const contiguous = intervals.every(
    (interval, i) => i === 0 || interval.window.startLsn === intervals[i - 1]!.window.endLsn,
  )
  const parts = intervals.reduce(
    (sum, interval) =>
      sum + [...interval.relations!, ...interval.unattributed!].reduce((bytes, part) => bytes + part.bytes, 0),
    0,
  )
  const watchedMs = intervals.reduce((sum, interval) => sum + (interval.window.durationMs ?? 0), 0)
  const serverMBps = parts / 1e6 / (watchedMs / 1000)
  const loadMBps = (loadEnd.bytes - loadStart.bytes) / 1e6 / ((loadEnd.at - loadStart.at) / 1000)
  const fellBehindS = (printedAtS.at(-1) ?? 0) - (printedAtS[0] ?? 0) - (printedAtS.length - 1)
  const half = Math.floor(lagsMB.length / 2)
  const maxOf = (values: number[]) => Math.max(...values)
  const addsUp = parts / Number(span!.bytes)
  results.topRate = {
    seconds,
    intervals: intervals.length,
    serverMBps,
    loadMBps,
    lagsMB,
    printedAtS,
    addsUp,
    contiguous,
  }
  const over = `${seconds} s of 1 s intervals over 3 sessions of bulk wide inserts (synchronous_commit off)`
  rows.push(
    {
      section: 'topRate',
      measure: `the WAL the server wrote while walcost top watched (over the load's whole run), ${over}`,
      value: `${serverMBps.toFixed(1)} MB/s (${loadMBps.toFixed(1)} MB/s)`,
      target: quick ? '-' : '>= 50 MB/s',
    },
    {
      section: 'topRate',
      measure:
        'walcost top: intervals printed of seconds elapsed; how much later the last came than one a second after the first',
      value: `${intervals.length} of ${seconds}; ${fellBehindS.toFixed(1)} s`,
      target: quick ? '-' : `${seconds}; ~0 s (kept up)`,
    },
    {
      section: 'topRate',
      measure:
        "how far behind the server's insert position each interval ended when printed: max (MB), the first half's / the second's",
      value: `${maxOf(lagsMB).toFixed(0)} MB (${(maxOf(lagsMB) / serverMBps).toFixed(1)} s of its WAL); ${maxOf(lagsMB.slice(0, half)).toFixed(0)} / ${maxOf(lagsMB.slice(half)).toFixed(0)} MB`,
      target: 'not growing',
    },
    {
      section: 'topRate',
      measure: 'the intervals, contiguous, add up to the LSN distance they span',
      value: `${contiguous ? 'contiguous' : 'NOT contiguous'}, ${addsUp.toFixed(4)}`,
      target: '1 within 1%',
    },
  )
}

/**
 * walcost inspect against pg_waldump --stats=record on the same files, as whole processes, the
 * median of alternated runs on warm files: WAL that Debian's PostgreSQL and pgbench wrote (at least
 * 1 GB in full mode). pg_waldump only counts by record type; inspect also splits by relation and
 * checks every record's CRC, as pg_waldump does.
 */
async function inspect() {
  const folder = await mkdtemp(join(tmpdir(), 'walcost-bench-wal-'))
  try {
    const wal = join(folder, 'wal')
    const {
      server: debian,
      binDir,
      first,
      last,
    } = await recordDebianWal(wal, quick ? { scale: 3, seconds: 2 } : { scale: 80, seconds: 10 })
    await debian.stop()
    const files = (await readdir(wal)).map((name) => join(wal, name))
    let bytes = 0
    for (const file of files) bytes += (await readFile(file)).length
    const cli = new URL('../dist/cli.js', import.meta.url).pathname
    const timed = async (command: string, args: string[]) => {
      const start = performance.now()
      await run(command, args, { maxBuffer: 256 * 1024 * 1024 })
      return (performance.now() - start) / 1000
    }
    const waldump = () => timed(join(binDir, 'pg_waldump'), ['--stats=record', '-p', wal, first, last])
    const walcost = () => timed(process.execPath, [cli, 'inspect', wal, '--json'])
    await waldump()
    await walcost()
    const pairs: Array<[number, number]> = []
    for (let i = 0; i < (quick ? 3 : 7); i++) {
      // Alternated, so that neither always runs right after the other.
      if (i % 2 === 0) pairs.push([await walcost(), await waldump()])
      else {
        const waldumpSeconds = await waldump()
        pairs.push([await walcost(), waldumpSeconds])
      }
    }
    const inspectSeconds = median(pairs.map((pair) => pair[0]))
    const waldumpSeconds = median(pairs.map((pair) => pair[1]))
    results.inspect = { bytes, files: files.length, inspectSeconds, waldumpSeconds, pairs }
    rows.push({
      section: 'inspect',
      measure: `walcost inspect's speed / pg_waldump --stats=record's, ${(bytes / 1e9).toFixed(2)} GB of PostgreSQL ${path.basename(path.dirname(binDir))} WAL (${(bytes / 1e6 / inspectSeconds).toFixed(0)} against ${(bytes / 1e6 / waldumpSeconds).toFixed(0)} MB/s)`,
      value: ratio(waldumpSeconds / inspectSeconds),
      target: quick ? '-' : '>= 1.0x',
    })
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}

if (!only || only === 'inspect') await inspect()
if (!only || only === 'crc') for (const row of crcRows()) rows.push({ section: 'crc', ...row })
if (!only || only === 'startup')
  // Quick: one run of one command, so that the section cannot rot without costing CI half a minute.
  for (const row of await startupRows(quick ? 1 : 9, quick ? ['predict'] : undefined))
    rows.push({ section: 'startup', ...row })

/**
 * estimateIngestCeiling against a real committed ingest: the field notes' table, calibrateIngest's
 * runs at 1, 100 and 1,000 rows a commit from 1 and 4 connections, and each estimate from a
 * measurement of the table by each method (INSERT, multi-row INSERT, COPY), calibrateStorage's flush time and the cores the server and this process
 * had over the runs (the machine's, less what other processes took).
 */
async function ceiling(url: string, client: pg.Client) {
  await client.query('alter system set track_wal_io_timing = on')
  await client.query('select pg_reload_conf()')
  try {
    await client.query(fieldNotesSetup(200_000))
    await client.query('vacuum analyze walcost_demo.device_metrics')
    // Quick: one round of each calibration run and measurement, so that the section runs, not that it holds.
    const rounds = quick ? 1 : 3
    const { cases, calibration, costs, fsyncMs, cores } = await ingestCases(url, 'walcost_demo.device_metrics', {
      rounds,
    })
    const parts = Object.fromEntries(MEASUREMENT_METHODS.map((method) => [method, costs[method].timing.parts]))
    results.ceiling = { parts, fsyncMs, cores, calibration, cases }
    for (const entry of cases) {
      rows.push({
        section: 'ceiling',
        measure: `estimate / achieved from a measurement by INSERT, multi-row INSERT, COPY; ${counted(entry.rowsPerCommit, 'row')} a commit x ${counted(entry.connections, 'connection')} (${Math.round(entry.achieved).toLocaleString('en-US')} rows/s achieved; ${entry.byMethod.copy.binding} binds)`,
        value: MEASUREMENT_METHODS.map((method) => ratio(entry.byMethod[method].ratio)).join(', '),
        target: quick ? '-' : '0.75-1.25x each',
      })
    }
    rows.push({
      section: 'ceiling',
      measure: "the three methods' ceilings, highest / lowest, in the case where they differ most",
      value: ratio(Math.max(...cases.map((entry) => entry.spread))),
      target: quick ? '-' : '<= 1.10x',
    })
    await client.query(ginTableSetup(quick ? 20_000 : 100_000))
    const gin = await ginIngestCase(url, { rounds })
    results.ceilingGin = {
      suggested: gin.suggested,
      shortRatio: gin.shortRatio,
      rounds: gin.rounds.map(({ cost, plainMsPerRow, achieved, estimate, ratio }) => ({
        msPerRow: cost.timing.msPerRow,
        plainMsPerRow,
        achieved,
        estimate,
        ratio,
      })),
    }
    rows.push({
      section: 'ceiling',
      measure: `estimate / achieved, jsonb under GIN with pending lists, 60,000 rows committed 1,000 a commit x 1 connection, from the ${integer(gin.suggested)}-row batch the notes name (from the default 10,000 rows: ${ratio(gin.shortRatio)})`,
      value: ratio(gin.ratio),
      target: quick ? '-' : '0.75-1.25x',
    })
  } finally {
    await client.query('drop schema if exists walcost_demo cascade')
    await client.query(`drop table if exists ${GIN_TABLE}`)
    await client.query('alter system reset track_wal_io_timing')
    await client.query('select pg_reload_conf()')
  }
}

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
