import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { BLOCK_INFO_BY_FILE } from '../support/block-info.js'
import { docBlocks } from '../support/doc-blocks.js'
import { type RunningExporter, startExporter } from '../support/exporter.js'
import { freePort, type RunningServer, startPostgres } from '../support/postgres-server.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname

/** Seconds of the window Prometheus' increase() is taken over. */
const WINDOW_S = 20
const PGBENCH_RELATIONS = [
  'pgbench_accounts',
  'pgbench_accounts_pkey',
  'pgbench_branches',
  'pgbench_branches_pkey',
  'pgbench_tellers',
  'pgbench_tellers_pkey',
  'pgbench_history',
]

/** Debian's prometheus (.ci/run installs it), scraping `target` every second, on a free loopback port with storage of its own. */
async function startPrometheus(dir: string, target: string): Promise<{ child: ChildProcess; api: string }> {
  const port = await freePort()
  const config = join(dir, 'prometheus.yml')
  await writeFile(
    config,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: walcost\n    static_configs:\n      - targets: ['${target}']\n`,
  )
  const child = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let log = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000)
  })
  const api = `http://127.0.0.1:${port}/api/v1`
  for (let tries = 0; ; tries++) {
    const ready = await fetch(`http://127.0.0.1:${port}/-/ready`).then(
      (response) => response.ok,
      () => false,
    )
    if (ready) return { child, api }
    if (tries > 300 || child.exitCode !== null) throw new Error(`prometheus did not start: ${log}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** An instant PromQL query at `time` (seconds): each series' labels and value. */
async function query(
  api: string,
  promql: string,
  time: number,
): Promise<Array<{ labels: Record<string, string>; value: number }>> {
  const response = await fetch(`${api}/query?${new URLSearchParams({ query: promql, time: String(time) })}`)
  const body = (await response.json()) as {
    status: string
    error?: string
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
  }
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`)
  return body.data.result.map((series) => ({ labels: series.metric, value: Number(series.value[1]) }))
}

const one = async (api: string, promql: string, time: number) => {
  const result = await query(api, promql, time)
  expect(result, promql).toHaveLength(1)
  return result[0]!.value
}

const lsn = (bytes: number) => `${Math.floor(bytes / 2 ** 32).toString(16)}/${(bytes % 2 ** 32).toString(16)}`

// A real Prometheus scraping `walcost exporter` every second while Debian's pgbench runs from four
// connections on a PostgreSQL 18 of its own.
describe('Prometheus scraping walcost exporter under pgbench on PostgreSQL 18', () => {
  let server: RunningServer
  let test: TestDatabase
  let exporter: RunningExporter | undefined
  let prometheus: ChildProcess | undefined
  let dir: string
  /** The first test's Prometheus API and the end of its window, for the docs' queries after it. */
  let scraped: { api: string; at: number } | undefined
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'walcost-prometheus-'))
    // Nothing recycles the window's WAL before pg_get_wal_block_info reads it again.
    server = await startPostgres(['-c', 'max_wal_size=8GB', '-c', 'wal_keep_size=8GB', '-c', 'checkpoint_timeout=1h'])
    test = await openPostgresDatabase(server.url)
    await run('pgbench', ['-i', '-q', test.url!])
  })
  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus?.once('exit', resolve))
      prometheus.kill('SIGTERM')
      await exited
    }
    await exporter?.stop()
    await test?.close()
    await server?.stop()
    await rm(dir, { recursive: true, force: true })
  })

  it("increase() of each pgbench relation's walcost_wal_bytes_total agrees with pg_get_wal_block_info over the same LSN window within 2%", async () => {
    exporter = await startExporter(['--url', test.url!, '--interval', '1', '--label', 'server=pg18'])
    const target = new URL(exporter.url).host
    const started = await startPrometheus(dir, target)
    prometheus = started.child
    const { api } = started
    const pgbench = run('pgbench', ['-c', '4', '-j', '2', '-T', String(WINDOW_S + 25), test.url!])
    // The window starts once every series is scraped and ends well before pgbench does.
    await new Promise((resolve) => setTimeout(resolve, 12_000 + WINDOW_S * 1000))
    const at = Date.now() / 1000
    scraped = { api, at }
    await pgbench

    const range = `[${WINDOW_S}s]`
    const first = await one(api, `min_over_time(walcost_wal_read_lsn_bytes${range})`, at)
    const last = await one(api, `max_over_time(walcost_wal_read_lsn_bytes${range})`, at)
    // increase() extrapolates from the first and last samples to the range's ends: the LSN gauge's
    // delta() over the same samples says by how much, and the counters are taken back to those samples.
    const stretch = (await one(api, `delta(walcost_wal_read_lsn_bytes${range})`, at)) / (last - first)
    expect(last - first).toBeGreaterThan(1_000_000)
    expect(stretch).toBeGreaterThanOrEqual(1)
    expect(stretch).toBeLessThan(1.2)
    const increases = await query(api, `increase(walcost_wal_bytes_total{relation=~"pgbench_.*"}${range})`, at)
    for (const series of increases) expect(series.labels).toMatchObject({ server: 'pg18', job: 'walcost' })

    const [{ oid } = { oid: '' }] = await test.query<{ oid: string }>(
      'select oid::text from pg_database where datname = current_database()',
    )
    const files = await test.query<{ name: string; node: string }>(
      `select relname::text as name, pg_relation_filenode(oid)::text as node from pg_class where relname like 'pgbench\\_%'`,
    )
    const rows = await test.query<{ database: string; relfilenode: string; bytes: string }>(BLOCK_INFO_BY_FILE, [
      lsn(first),
      lsn(last),
    ])
    for (const name of PGBENCH_RELATIONS) {
      const node = files.find((file) => file.name === name)?.node
      const theirs = rows
        .filter((row) => row.database === oid && row.relfilenode === node)
        .reduce((sum, row) => sum + Number(row.bytes), 0)
      const ours = (increases.find((series) => series.labels.relation === name)?.value ?? 0) / stretch
      expect(Math.abs(ours - theirs), `${name}: ${ours} against ${theirs}`).toBeLessThanOrEqual(0.02 * theirs)
    }
    expect(increases.find((series) => series.labels.relation === 'pgbench_accounts')!.value).toBeGreaterThan(100_000)

    // At the window's two ends, every byte read is in a relation's counter or an unattributed one.
    const countedAt = async (time: number) =>
      (await one(api, 'sum(walcost_wal_bytes_total) + sum(walcost_wal_unattributed_bytes_total)', time)) -
      (await one(api, 'walcost_wal_read_lsn_bytes', time))
    expect(await countedAt(at)).toBe(await countedAt(at - WINDOW_S))
    expect(await one(api, 'walcost_up', at)).toBe(1)
    expect(await one(api, 'walcost_wal_missed_bytes_total', at)).toBe(0)
  }, 240_000)

  it("runs docs/exporter.md's PromQL on the scraped series, and promtool passes its configuration and rules", async () => {
    expect(scraped).toBeDefined()
    const { api, at } = scraped as { api: string; at: number }
    const blocks = (await docBlocks(root)).filter((block) => block.doc === 'docs/exporter.md')
    const queries = blocks.filter((block) => block.language === 'promql')
    expect(queries.length).toBeGreaterThanOrEqual(4)
    for (const block of queries) {
      // Each answers for the pgbench database's relations (or its server), not with nothing (a
      // share of an index that wrote nothing in the range is 0/0, NaN, as PromQL has it).
      const result = await query(api, block.text, at)
      expect(
        result.some((series) => Number.isFinite(series.value)),
        `docs/exporter.md:${block.line}`,
      ).toBe(true)
    }
    const files = blocks.filter((block) => block.language === 'yaml' && block.file !== null)
    expect(files.map((block) => block.file)).toEqual(['prometheus.yml', 'walcost-rules.yml'])
    // Beside, not over, the running Prometheus' own configuration.
    const docs = join(dir, 'docs')
    await mkdir(docs)
    for (const block of files) await writeFile(join(docs, block.file as string), block.text)
    await run('promtool', ['check', 'config', join(docs, 'prometheus.yml')])
    await run('promtool', ['check', 'rules', join(docs, 'walcost-rules.yml')])
  })
})
