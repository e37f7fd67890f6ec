import { execFile } from 'node:child_process'
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** The walcost command in a project folder, with nothing of this environment but PATH and HOME. */
async function walcostIn(project: string, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout } = await run(process.execPath, [cli, ...args], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    })
    return { code: 0, stdout }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout + failed.stderr }
  }
}
const SCHEMA = `create table orders (id int8 generated always as identity primary key, customer int4 not null,
                     placed_at timestamptz not null default now(), total numeric(12,2));
create index orders_customer_idx on orders (customer);
insert into orders (customer, total) select i % 300, i from generate_series(1, 5000) i;
`

// A project that keeps its WAL budget in the repository, as a pull request would change it.
describe('walcost check in a project', () => {
  let project: string
  const check = (args: string[] = [], env: Record<string, string> = {}) => walcostIn(project, ['check', ...args], env)
  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'walcost-check-'))
    await writeFile(join(project, 'schema.sql'), SCHEMA)
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'app',
        private: true,
        walcost: { measurements: [{ name: 'orders insert', table: 'orders', setupFile: 'schema.sql', count: 2_000 }] },
      }),
    )
  })
  afterAll(() => rm(project, { recursive: true, force: true }))

  it('passes without a baseline and says how to record one, then records it with --update', async () => {
    const first = await check()
    expect(first.code).toBe(0)
    expect(first.stdout).toContain('orders insert: no baseline yet; run walcost check --update')
    // The table has a header, and shows what was measured though there is nothing to compare it with.
    expect(first.stdout).toMatch(/^measurement\s+part\s+baseline B\/row\s+now B\/row\s+change\s+%\s+against baseline$/m)
    expect(first.stdout).toMatch(/^orders insert\s+total\s+-\s+\d+\s+-\s+no baseline$/m)
    expect(first.stdout).toMatch(/^orders insert\s+index orders_customer_idx\s+-\s+\d+\s+-\s+no baseline$/m)
    expect((await check(['--update'])).code).toBe(0)
    const recorded = JSON.parse(await readFile(join(project, 'package.json'), 'utf8')).walcost.measurements[0].baseline
    expect(Object.keys(recorded.relations)).toEqual(
      expect.arrayContaining(['heap', 'index orders_customer_idx', 'index orders_pkey']),
    )
    expect(recorded.bytesPerRow).toBeGreaterThan(150)
    const again = await check()
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('walcost check: within budgets and baselines.')
  })

  it('fails after a migration that adds an index, with the index as its own line and the job summary written', async () => {
    await appendFile(join(project, 'schema.sql'), 'create index orders_placed_idx on orders (placed_at, customer);\n')
    const summary = join(project, 'summary.md')
    const failed = await check([], { GITHUB_STEP_SUMMARY: summary })
    expect(failed.code).toBe(1)
    const line = failed.stdout.split('\n').find((text) => text.includes('index orders_placed_idx'))
    expect(line).toMatch(/^orders insert\s+index orders_placed_idx\s+-\s+\d+\s+new\s+grew$/)
    expect(failed.stdout).toMatch(/^orders insert\s+total\s+\d+\s+\d+\s+\+\d+\s+\+[\d.]+%\s+grew$/m)
    expect(failed.stdout).toContain('grew against the baseline: walcost check --update if intended')
    expect(failed.stdout).not.toContain('over budget')
    const markdown = await readFile(summary, 'utf8')
    expect(markdown).toContain('### walcost: WAL per row grew')
    expect(markdown).toMatch(/\| orders insert \| index orders_placed_idx \| - \| \d+ \| new \|/)
    // Accepting the change: --update records it, and the check passes again.
    expect((await check(['--update'])).code).toBe(0)
    expect((await check(['--markdown'])).stdout).toContain('### walcost: WAL per row within budgets and baselines')
  })

  it('fails on a budget the measurement exceeds, naming the measurement and the bound', async () => {
    const config = join(project, 'walcost.config.json')
    await writeFile(
      config,
      JSON.stringify({
        measurements: [
          { name: 'tight', table: 'orders', setupFile: 'schema.sql', count: 500, budget: { bytesPerRow: 50 } },
        ],
      }),
    )
    const failed = await check(['--config', 'walcost.config.json'])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toMatch(
      /tight: over budget: bytesPerRow \d+(\.\d)? > 50; raise it in walcost\.config\.json if intended\./,
    )
    // --update would change nothing here: a budget is not a baseline.
    expect(failed.stdout).toContain('walcost check: over budget: raise it in walcost.config.json if intended')
    expect(failed.stdout).not.toContain('grew')
    await rm(config)
  })

  it('refuses a config with a misspelt key instead of passing without it', async () => {
    const config = join(project, 'walcost.config.json')
    const typo = { name: 'typo', table: 'orders', setupFile: 'schema.sql', count: 500, checkpiont: true }
    await writeFile(config, JSON.stringify({ measurements: [typo] }))
    const refused = await check()
    expect(refused.code).toBe(2)
    expect(refused.stdout).toContain(
      'INVALID_OPTIONS: ' +
        config +
        ': unknown option measurements.0.checkpiont; did you mean measurements.0.checkpoint?',
    )
    const budget = { name: 'typo', table: 'orders', setupFile: 'schema.sql', count: 500, budget: { indexs: { x: 1 } } }
    await writeFile(config, JSON.stringify({ measurements: [budget] }))
    expect((await check()).stdout).toContain('did you mean measurements.0.budget.indexes?')
    // A budget on an index the table does not have is a mistake in the config, not an overrun.
    const missing = {
      name: 'missing',
      table: 'orders',
      setupFile: 'schema.sql',
      count: 500,
      budget: { indexes: { orders_custmer_idx: 5 } },
    }
    await writeFile(config, JSON.stringify({ measurements: [missing] }))
    const failed = await check()
    expect(failed.code).toBe(2)
    expect(failed.stdout).toMatch(
      /INVALID_OPTIONS: .*walcost\.config\.json: measurement missing: budget indexes\.orders_custmer_idx: "public"\."orders" has no index orders_custmer_idx \(its indexes: orders_customer_idx, orders_pkey(, orders_placed_idx)?\)\. Did you mean orders_customer_idx\?/,
    )
    expect(failed.stdout).not.toContain('over budget')
    await rm(config)
  })
})

// The app's real write path held to its budget: a module whose default export is the batch.
describe('walcost check with a run module', () => {
  let project: string
  const walcost = (args: string[]) => walcostIn(project, args)
  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'walcost-check-run-'))
    await writeFile(join(project, 'schema.sql'), SCHEMA)
    await writeFile(
      join(project, 'orders-batch.mjs'),
      `// The app's repository function, as the app calls it.
export async function insertOrders(client, orders) {
  for (const order of orders) await client.query('insert into orders (customer, total) values ($1, $2)', [order.customer, order.total])
}
export default (db) => insertOrders(db, Array.from({ length: 1000 }, (_, i) => ({ customer: (i * 7) % 300, total: i })))
`,
    )
    await writeFile(
      join(project, 'walcost.config.json'),
      JSON.stringify({
        measurements: [{ name: 'orders batch', table: 'orders', setupFile: 'schema.sql', run: './orders-batch.mjs' }],
      }),
    )
  })
  afterAll(() => rm(project, { recursive: true, force: true }))

  it('measures the module with walcost measure --run', async () => {
    const measured = await walcost([
      'measure',
      '--setup-file',
      'schema.sql',
      '--table',
      'orders',
      '--run',
      'orders-batch.mjs',
      '--json',
    ])
    expect(measured.code).toBe(0)
    const cost = JSON.parse(measured.stdout)
    expect(cost.rows).toBe(1000)
    expect(cost.scenario.batch).toBe('run')
    expect(cost.indexes.map((index: { name: string }) => index.name).sort()).toEqual([
      'orders_customer_idx',
      'orders_pkey',
    ])
    const missing = await walcost(['measure', '--table', 'orders', '--run', 'nowhere.mjs'])
    expect(missing.code).toBe(2)
    expect(missing.stdout).toContain('--run: cannot load nowhere.mjs')
  })

  it('catches a new index the app pays for, and passes once the baseline is updated', async () => {
    expect((await walcost(['check', '--update'])).code).toBe(0)
    expect((await walcost(['check'])).stdout).toContain('walcost check: within budgets and baselines.')
    await appendFile(join(project, 'schema.sql'), 'create index orders_placed_idx on orders (placed_at, customer);\n')
    const failed = await walcost(['check'])
    expect(failed.code).toBe(1)
    expect(failed.stdout).toMatch(/^orders batch\s+index orders_placed_idx\s+-\s+\d+\s+new\s+grew$/m)
    expect((await walcost(['check', '--update'])).code).toBe(0)
    expect((await walcost(['check'])).code).toBe(0)
  })
})

// On a real server the database outlives each run: every check must start from the same state.
describeOnPostgres('walcost check against a real server', () => {
  let project: string
  let database: TestDatabase
  beforeAll(async () => {
    database = await openPostgresDatabase(inject('postgresUrl'))
    project = await mkdtemp(join(tmpdir(), 'walcost-check-pg-'))
    // A plain CREATE TABLE, as a schema file has it: a second run would fail on it if the first's persisted.
    await writeFile(join(project, 'schema.sql'), `${SCHEMA}analyze orders;\n`)
    const measurement = { table: 'orders', setupFile: 'schema.sql', count: 2_000, budget: { bytesPerRow: 2_000 } }
    await writeFile(
      join(project, 'walcost.config.json'),
      JSON.stringify({
        measurements: [
          { name: 'orders insert', ...measurement },
          { name: 'orders copy', ...measurement, method: 'copy' },
        ],
      }),
    )
  })
  afterAll(async () => {
    await database?.close()
    await rm(project, { recursive: true, force: true })
  })

  it('gives the same verdicts three times in a row, and leaves nothing in the database', async () => {
    const url = database.url ?? ''
    const recorded = await walcostIn(project, ['check', '--update', '--url', url])
    expect(recorded.code, recorded.stdout).toBe(0)
    const verdicts: string[][] = []
    for (let run = 0; run < 3; run++) {
      const checked = await walcostIn(project, ['check', '--url', url])
      expect(checked.code, checked.stdout).toBe(0)
      // Measurement, part and verdict of every line, and the closing sentence.
      verdicts.push(
        checked.stdout
          .split('\n')
          .filter((line) => line.startsWith('orders ') || line.startsWith('walcost check:'))
          .map((line) => {
            const cells = line.split(/\s{2,}/)
            return cells.length > 1 ? `${cells[0]} ${cells[1]} ${cells.at(-1)}` : line
          }),
      )
    }
    expect(verdicts[0]).toContain('walcost check: within budgets and baselines.')
    expect(verdicts[0]).toContain('orders copy index orders_customer_idx ok')
    expect(verdicts[1]).toEqual(verdicts[0])
    expect(verdicts[2]).toEqual(verdicts[0])
    const [left] = await database.query<{ orders: string | null }>(
      `select to_regclass('public.orders')::text as orders`,
    )
    expect(left?.orders).toBeNull()
  })
})
