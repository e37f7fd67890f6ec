import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { describeOnPostgres } from '../support/backends.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname
const CLEAN_ENV = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(PG|DATABASE_URL$)/.test(name)))

/** Runs the built CLI; resolves with its exit code and output whether it succeeded or not. */
async function walcost(args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...CLEAN_ENV, ...env } })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

describe('the built package', () => {
  it('measures from the ESM build', async () => {
    const { measureInsertCost } = await import('../../dist/index.js')
    const cost = await measureInsertCost({ setup: 'create table t (id int8 primary key)', table: 't', count: 100 })
    expect(cost.rows).toBe(100)
  })

  it('measures from the CommonJS build', async () => {
    const require = createRequire(import.meta.url)
    const { measureInsertCost, WalcostError } = require('../../dist/index.cjs') as typeof import('../../src/index.js')
    const cost = await measureInsertCost({
      setup: 'create table t (id int8 primary key)',
      table: 't',
      count: 100,
      method: 'copy',
    })
    expect(cost.rows).toBe(100)
    await expect(measureInsertCost({ table: 't' })).rejects.toBeInstanceOf(WalcostError)
  })
})

describe('the walcost command, before it connects', () => {
  it("prints the usage for walcost help, and a command's for walcost help COMMAND", async () => {
    const help = await walcost(['help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('usage: walcost <demo|measure|')
    expect((await walcost(['help', 'ceiling'])).stdout).toContain('usage: walcost ceiling [options]')
  })

  it('refuses a --rows that is a directory as INVALID_OPTIONS naming it, exit 2, for either format', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'walcost-rows-'))
    try {
      for (const name of ['rows.csv', 'rows.jsonl']) {
        const path = join(dir, name)
        await mkdir(path)
        const refused = await walcost(['measure', '--table', 't', '--rows', path])
        expect(refused.code).toBe(2)
        expect(refused.stderr).toBe(
          `walcost measure: INVALID_OPTIONS: --rows: cannot read ${path} (a directory or device, not a file).\n`,
        )
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describeOnPostgres('the walcost command', () => {
  let url: string
  let database: pg.Client
  let dir: string
  beforeAll(async () => {
    url = inject('postgresUrl')
    database = new pg.Client({ connectionString: url })
    await database.connect()
    await database.query(`drop table if exists cli_events; create table cli_events (id int8 primary key, kind int4 not null, note text);
                          create index cli_events_kind_idx on cli_events (kind)`)
    dir = await mkdtemp(join(tmpdir(), 'walcost-cli-'))
  })
  afterAll(async () => {
    await database.query('drop table if exists cli_events')
    await database.end()
    await rm(dir, { recursive: true, force: true })
  })

  it('prints the field notes experiment as a table against a real server', async () => {
    const { code, stdout } = await walcost(['demo', '--url', url, '--prefill-rows', '20000', '--batch-rows', '5000'])
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^scenario\s+rows\s+WAL records/)
    expect(lines.slice(2, 5).map((line) => line.split(/\s{2,}/)[0])).toEqual([
      'after-checkpoint',
      'steady',
      'no-indexes',
    ])
    expect(lines).toContainEqual(expect.stringMatching(/^index maintenance is \d+% of WAL/))
    // A real server: every run on its own copy of the whole prefill, and the A/A check says how exactly they repeat.
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^Every run measured its own scratch copy of the table, built alike from its newest 20,000 rows .* A\/A check: after-checkpoint measured again, last, differs by [\d,]+ records?/,
      ),
    )
  })

  it('prints exactly the result contract with --json', async () => {
    const { code, stdout } = await walcost([
      'measure',
      '--url',
      url,
      '--table',
      'cli_events',
      '--count',
      '300',
      '--method',
      'copy',
      '--json',
    ])
    expect(code).toBe(0)
    const cost = JSON.parse(stdout) as import('../../src/index.js').InsertCost
    expect(cost.rows).toBe(300)
    expect(cost.scenario).toMatchObject({ method: 'copy', batch: 'count', table: '"public"."cli_events"' })
    expect(Object.keys(cost)).toEqual(
      expect.arrayContaining([
        'logicalBytes',
        'windowBytes',
        'walBytes',
        'noiseBytes',
        'breakdown',
        'indexes',
        'statWal',
        'server',
      ]),
    )
  })

  it('compares scenarios, audits indexes and measures remedies, with the settings behind the numbers', async () => {
    const compared = await walcost(['compare', '--url', url, '--table', 'cli_events', '--count', '300'])
    expect(compared.stderr).toBe('')
    expect(compared.code).toBe(0)
    expect(compared.stdout).toMatch(/^scenario\s+rows/)
    expect(compared.stdout).toContain('without:cli_events_kind_idx')
    const audited = await walcost([
      'audit',
      '--url',
      url,
      '--table',
      'cli_events',
      '--count',
      '300',
      '--sample-rows',
      '0',
      '--json',
    ])
    expect(audited.stderr).toBe('')
    expect(audited.code).toBe(0)
    expect(
      JSON.parse(audited.stdout)
        .indexes.map((index: { name: string }) => index.name)
        .sort(),
    ).toEqual(['cli_events_kind_idx', 'cli_events_pkey'])
    const remedies = await walcost(['remedies', '--url', url, '--table', 'cli_events', '--count', '300'])
    expect(remedies.stderr).toBe('')
    expect(remedies.code).toBe(0)
    expect(remedies.stdout).toMatch(/^COPY {2,}/m)
    expect(remedies.stdout).toContain('checkpoints 4x further apart')
    const measured = await walcost(['measure', '--url', url, '--table', 'cli_events', '--count', '100'])
    expect(measured.stdout).toContain('settings behind these numbers:')
    expect(measured.stdout).toContain('- full_page_writes is on')
  })

  it('suggests a budget the same batch passes, as flags that take it back', async () => {
    const batch = ['measure', '--url', url, '--table', 'cli_events', '--count', '200', '--seed', '7']
    const suggested = await walcost([...batch, '--suggest-budget', '--headroom', '0.1'])
    expect(suggested.code).toBe(0)
    expect(suggested.stdout).toContain('suggested budget (what was measured, plus 10% headroom, in whole bytes):')
    const flags = /on the command line: +(.*)$/m.exec(suggested.stdout)?.[1]?.split(' ') ?? []
    expect(flags).toContain('--budget-bytes-per-row')
    expect(flags.filter((flag) => flag === '--budget-index')).toHaveLength(2)
    const json = JSON.parse((await walcost([...batch, '--suggest-budget', '--json'])).stdout)
    expect(json.suggestedBudget.bytesPerRow).toBe(Math.ceil(json.bytesPerRow * 1.2))
    expect((await walcost([...batch, ...flags])).code).toBe(0)
  })

  it('exits 1 over budget and 0 within it, for CI pipelines', async () => {
    const over = await walcost([
      'measure',
      '--url',
      url,
      '--table',
      'cli_events',
      '--count',
      '200',
      '--budget-bytes-per-row',
      '10',
    ])
    expect(over.code).toBe(1)
    expect(over.stdout).toMatch(/over the WAL budget: bytesPerRow \d+/)
    expect(over.stdout).toContain('index cli_events_kind_idx')
    const within = await walcost([
      'measure',
      '--url',
      url,
      '--table',
      'cli_events',
      '--count',
      '200',
      '--budget-bytes-per-row',
      '100000',
      '--budget-index',
      'cli_events_kind_idx=5000',
    ])
    expect(within.code).toBe(0)
  })

  it('streams rows from CSV and JSONL files', async () => {
    const csv = join(dir, 'rows.csv')
    const jsonl = join(dir, 'rows.jsonl')
    await writeFile(csv, 'id,kind,note\n1,2,"a, quoted note"\n2,3,\n3,4,""\n')
    await writeFile(jsonl, '{"id": 1, "kind": 2, "note": "x"}\n\n{"id": 2, "kind": 3, "note": null}\n')
    for (const [file, rows] of [
      [csv, 3],
      [jsonl, 2],
    ] as const) {
      const { code, stdout, stderr } = await walcost([
        'measure',
        '--url',
        url,
        '--table',
        'cli_events',
        '--rows',
        file,
        '--method',
        'copy',
        '--json',
      ])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      expect(JSON.parse(stdout).rows).toBe(rows)
    }
  })

  it('connects with the PG* variables node-postgres reads when there is no --url', async () => {
    const { hostname, port, username, password } = new URL(url)
    const { code, stdout } = await walcost(['measure', '--table', 'cli_events', '--count', '10', '--json'], {
      PGHOST: hostname,
      PGPORT: port,
      PGUSER: username,
      PGPASSWORD: password,
      PGDATABASE: 'postgres',
    })
    expect(code).toBe(0)
    expect(JSON.parse(stdout).server.backend).toBe('pg')
  })

  it('predicts from the catalog, plans a ceiling from a saved measurement, and writes Vega-Lite', async () => {
    const predicted = await walcost(['predict', '--url', url, '--table', 'cli_events', '--json'])
    expect(predicted.code).toBe(0)
    expect(JSON.parse(predicted.stdout).indexes.map((index: { name: string }) => index.name)).toEqual([
      'cli_events_kind_idx',
      'cli_events_pkey',
    ])
    const measured = await walcost(['measure', '--url', url, '--table', 'cli_events', '--count', '500', '--json'])
    const saved = join(dir, 'cost.json')
    await writeFile(saved, measured.stdout)
    const chart = join(dir, 'ceiling.vl.json')
    const ceiling = await walcost([
      'ceiling',
      '--from',
      saved,
      '--storage',
      'nvme',
      '--target-rows-per-sec',
      '20000',
      '--vega',
      chart,
    ])
    expect(ceiling.code).toBe(0)
    expect(ceiling.stdout).toMatch(/bound by (write bandwidth|IOPS|commit flush latency)/)
    const spec = JSON.parse(await (await import('node:fs/promises')).readFile(chart, 'utf8'))
    expect(spec.$schema).toContain('vega-lite/v5')
    const plain = await walcost([
      'ceiling',
      '--bytes-per-row',
      '345',
      '--data-bytes-per-row',
      '40',
      '--target-rows-per-sec',
      '50000',
      '--json',
    ])
    expect(JSON.parse(plain.stdout).walMBps).toBeCloseTo(17.25, 6)
  })

  it("generates --help from the library's option definitions", async () => {
    const { code, stdout } = await walcost(['measure', '--help'])
    expect(code).toBe(0)
    expect(stdout).toContain('--batch-size N')
    expect(stdout).toContain('(default 1000)')
    expect(stdout).toContain('--method insert|multirow|copy')
    expect(stdout).toContain('--budget-bytes-per-row N')
    const top = await walcost(['--help'])
    expect(top.stdout).toMatch(
      /usage: walcost <demo\|measure\|compare\|compare-writes\|remedies\|predict\|ceiling\|migration\|check\|observe\|inspect\|top\|exporter\|audit>/,
    )
  })

  it('exits 2 with usage or the error code, and never prints the password', async () => {
    const unknown = await walcost(['frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('unknown command frobnicate; the commands are demo, measure')
    const unreachable = await walcost([
      'measure',
      '--url',
      'postgres://nobody:secret@127.0.0.1:1/none',
      '--table',
      't',
      '--count',
      '1',
    ])
    expect(unreachable.code).toBe(2)
    expect(unreachable.stderr).toContain('CONNECTION_FAILED')
    expect(unreachable.stderr).not.toContain('secret')
    expect(unreachable.stderr).toContain('connection refused by 127.0.0.1:1: no server listens there')
    expect(unreachable.stderr).not.toContain('within')
    const missingTable = await walcost(['measure', '--url', url, '--table', 'nowhere', '--count', '1'])
    expect(missingTable.code).toBe(2)
    expect(missingTable.stderr).toContain('TABLE_NOT_FOUND')
  })

  it('speaks in flags: every message names the flag as typed and says what to do', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['measure', '--count', '10'], /^walcost measure: INVALID_OPTIONS: --table is required\.$/],
      [
        ['measure', '--table', 't', '--count', 'lots'],
        /^walcost measure: INVALID_OPTIONS: --count expects a number, got 'lots'\.$/,
      ],
      [
        ['measure', '--tabel', 'x'],
        /^walcost measure: unknown option --tabel; did you mean --table\? See walcost measure --help\.$/,
      ],
      [['measure', '--table'], /^walcost measure: --table needs a value\. See walcost measure --help\.$/],
      [
        ['measure', '--url', 'notaurl', '--table', 't', '--count', '1'],
        /^walcost measure: INVALID_OPTIONS: --url: expected a connection URL \(postgres:\/\//,
      ],
      [['predict'], /--table: give either a table to read from the database, or a description of a planned table/],
      [['audit', '--table', 't', '--min-stats-age-days', 'x'], /--min-stats-age-days expects a number, got 'x'/],
      [['ceiling'], /give --bytes-per-row N \(WAL bytes a row\), or --from FILE/],
      [
        ['measure', '--table', 't', '--count', '1', '--setup-file', '/nonexistent/setup.sql'],
        /--setup-file: cannot read \/nonexistent\/setup\.sql \(ENOENT/,
      ],
      [
        ['ceiling', '--bytes-per-row', '300', '--vega', '/nonexistent/x.json'],
        /^walcost ceiling: INVALID_OPTIONS: --vega: cannot write \/nonexistent\/x\.json/,
      ],
    ]
    for (const [args, message] of cases) {
      const { code, stderr } = await walcost(args)
      expect({ args, code }).toEqual({ args, code: 2 })
      expect(stderr.trim().split('\n').at(-1)).toMatch(message)
      expect(stderr).not.toMatch(/ at \S+ \(|Invalid input|ZodError/)
    }
  })

  it('prints its version, turns yes/no options off, and reads setup from a file', async () => {
    const { version } = createRequire(import.meta.url)('../../package.json') as { version: string }
    expect((await walcost(['--version'])).stdout.trim()).toBe(version)
    const dir = await mkdtemp(join(tmpdir(), 'walcost-cli-'))
    try {
      const setup = join(dir, 'setup.sql')
      await writeFile(setup, 'create table t (id int8 primary key, v int4); create index t_v on t (v)')
      for (const off of ['--no-per-index', '--per-index=false']) {
        const { code, stdout } = await walcost([
          'compare',
          '--setup-file',
          setup,
          '--table',
          't',
          '--count',
          '50',
          off,
          '--json',
        ])
        expect(code).toBe(0)
        expect(Object.keys(JSON.parse(stdout).scenarios)).toEqual(['after-checkpoint', 'steady', 'no-indexes'])
      }
      const on = await walcost([
        'compare',
        '--setup-file',
        setup,
        '--table',
        't',
        '--count',
        '50',
        '--per-index=true',
        '--json',
      ])
      expect(Object.keys(JSON.parse(on.stdout).scenarios)).toContain('without:t_v')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('measures updates from the command line, explains HOT, and fails a hotShare budget naming the index', async () => {
    const setup = `create table items (id int8 primary key, status text not null, note text) with (fillfactor = 80);
      create index items_status on items (status); insert into items select i, 'new', 'x' from generate_series(1, 5000) i`
    const hot = await walcost([
      'measure',
      '--setup',
      setup,
      '--table',
      'items',
      '--update-rows',
      '200',
      '--set',
      "note='y'",
      '--pick',
      'random',
      '--json',
    ])
    expect(hot.code).toBe(0)
    const cost = JSON.parse(hot.stdout)
    expect(cost.kind).toBe('write-cost')
    expect(cost.writes).toMatchObject({ updated: 200, hotUpdated: 200 })
    const lost = await walcost([
      'measure',
      '--setup',
      setup,
      '--table',
      'items',
      '--update-rows',
      '200',
      '--set',
      "status='done'",
      '--pick',
      'random',
      '--budget-hot-share',
      '0.9',
    ])
    expect(lost.code).toBe(1)
    expect(lost.stdout).toContain('over the WAL budget: hotShare 0.0 < 0.9')
    expect(lost.stdout).toContain('changed a column of items_status')
    const missing = await walcost(['measure', '--setup', setup, '--table', 'items', '--update-rows', '10'])
    expect(missing.stderr.trim()).toBe('walcost measure: INVALID_OPTIONS: --set: name at least one column.')
  })

  it('puts the budget verdict into --json, and takes a storage as JSON', async () => {
    const setup = 'create table t (id int8 primary key)'
    const over = await walcost([
      'measure',
      '--setup',
      setup,
      '--table',
      't',
      '--count',
      '50',
      '--budget-bytes-per-row',
      '1',
      '--json',
    ])
    expect(over.code).toBe(1)
    const result = JSON.parse(over.stdout)
    expect(result.budget.pass).toBe(false)
    expect(result.budget.violations[0]).toMatchObject({ bound: 'bytesPerRow', limit: 1, measured: result.bytesPerRow })
    const ceiling = await walcost([
      'ceiling',
      '--bytes-per-row',
      '345',
      '--storage',
      '{"writeMBps":500,"iops":20000,"fsyncMs":0.5}',
    ])
    expect(ceiling.code).toBe(0)
    expect(ceiling.stdout).toContain(
      'Ingest ceiling on storage of 500 MB/s, 20,000 IOPS, 0.5 ms a flush, 1 row a commit',
    )
    expect(ceiling.stdout).toMatch(/MB\/s of WAL \([\d,.]+ GB\/day\)/)
  })
})
