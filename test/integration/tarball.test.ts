import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { backends, describeOnPostgres, openPostgresDatabase } from '../support/backends.js'
import { type DocBlock, docBlocks, isScript } from '../support/doc-blocks.js'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname

// The package as a user gets it: packed, installed into a fresh project from the tarball, used from
// ESM, CJS, the command line and the vitest matcher.
describe('the packed tarball in a fresh project', () => {
  let project: string
  let installed: { stdout: string; stderr: string }
  const inProject = (command: string, args: string[]) =>
    run(command, args, {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    })

  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'walcost-consumer-'))
    // As a release packs it: prepack takes "prepare" out of the packed manifest, postpack puts it back.
    await run('npm', ['pack', '--pack-destination', project], { cwd: root })
    const tarball = (await readdir(project)).find((name) => name.endsWith('.tgz'))!
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
    installed = await inProject('npm', [
      'install',
      '--no-audit',
      '--no-fund',
      '--prefer-offline',
      `./${tarball}`,
      'vitest@4.1.12',
      'vite@8.3.8',
      'typescript@5.9.3',
      'jest@30.5.2',
      '@babel/plugin-transform-modules-commonjs@7.29.14',
      'drizzle-orm@0.45.4',
      'kysely@0.29.9',
    ])
  }, 300_000)
  afterAll(() => rm(project, { recursive: true, force: true }))

  const setup = 'create table t (id int8 primary key, v float8 not null)'

  it('installs without an install script of its own: npm 11 has nothing to warn about', async () => {
    const manifest = JSON.parse(await readFile(join(project, 'node_modules/walcost/package.json'), 'utf8'))
    expect(manifest.scripts ?? {}).not.toHaveProperty('prepare')
    expect(`${installed.stdout}${installed.stderr}`).not.toMatch(/walcost@[^ ]* \((prepare|install|postinstall)/)
    const ours = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'))
    expect(ours.scripts.prepare).toBe('tsup')
  })

  it('holds one copy of the library a module format, and no source maps, in at most 2.5 MB', async () => {
    const installedRoot = join(project, 'node_modules/walcost')
    const files = (await readdir(installedRoot, { recursive: true, withFileTypes: true })).filter((entry) =>
      entry.isFile(),
    )
    const paths = files.map((entry) => join(entry.parentPath, entry.name))
    expect(paths.filter((path) => path.endsWith('.map'))).toEqual([])
    const sizes = await Promise.all(paths.map(async (path) => (await readFile(path)).length))
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBeLessThanOrEqual(2.5 * 1024 * 1024)
    // The WAL reader's own words: the CLI and the archive worker load the ESM build's chunk with the
    // reader in it, where each used to bundle copies of the library. CommonJS users get the other.
    const holding = async (extension: string) => {
      const found: string[] = []
      for (const path of paths.filter((candidate) => candidate.endsWith(extension)))
        if ((await readFile(path, 'utf8')).includes('lost the record chain at')) found.push(path)
      return found
    }
    expect(await holding('.js')).toHaveLength(1)
    expect(await holding('.cjs')).toHaveLength(1)
  })

  it('works from ESM', async () => {
    await writeFile(
      join(project, 'esm.mjs'),
      `import { measureInsertCost } from 'walcost'
      import { toMarkdown } from 'walcost/report'
      import { measureOptionsSchema } from 'walcost/schemas'
      const cost = await measureInsertCost({ setup: '${setup}', table: 't', count: 100 })
      console.log(cost.rows, cost.attribution, toMarkdown(cost).startsWith('**'), measureOptionsSchema.safeParse({ table: 't', count: 1 }).success)`,
    )
    expect((await inProject('node', ['esm.mjs'])).stdout.trim()).toBe('100 wal true true')
  })

  it('works from CommonJS', async () => {
    await writeFile(
      join(project, 'cjs.cjs'),
      `const { measureInsertCost } = require('walcost')
      const { formatInsertCost } = require('walcost/report')
      const { walBudgetSchema } = require('walcost/schemas')
      measureInsertCost({ setup: '${setup}', table: 't', count: 100, method: 'copy' }).then((cost) =>
        console.log(cost.rows, formatInsertCost(cost).includes('100 rows'), walBudgetSchema.safeParse({ bytesPerRow: 400 }).success))`,
    )
    expect((await inProject('node', ['cjs.cjs'])).stdout.trim()).toBe('100 true true')
  })

  /** Runs a command in the project, resolving with its exit code and output whether or not it failed. */
  const outcome = (command: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}) =>
    run(command, args, {
      cwd,
      maxBuffer: 16 * 1024 * 1024,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        output: error.stdout + error.stderr,
      }),
    )

  /** tsc over `files` under strict settings, resolving with its exit code and output whether or not it failed. */
  const typeCheck = async (name: string, files: Record<string, string>, skipLibCheck: boolean) => {
    for (const [file, text] of Object.entries(files)) await writeFile(join(project, file), text)
    await writeFile(
      join(project, `${name}.tsconfig.json`),
      JSON.stringify({
        compilerOptions: { strict: true, skipLibCheck, noEmit: true, module: 'nodenext', target: 'es2022', types: [] },
        files: Object.keys(files),
      }),
    )
    return outcome('npx', ['tsc', '-p', `${name}.tsconfig.json`], project)
  }

  // The declarations walcost ships are checked too. PGlite's own need the Emscripten globals
  // (@types/emscripten) under skipLibCheck: false, and walcost's name PGlite's class, since that is
  // what a run batch on the embedded default is handed: every error left is one of PGlite's files.
  it("type-checks in a strict consumer that checks library types too: no error in walcost's declarations", async () => {
    const result = await typeCheck(
      'library',
      {
        'library.ts': `import { measureInsertCost, type Database, type InsertCost, type WalcostErrorCode } from 'walcost'
        const db: Database = 'postgres://localhost/app'
        const code: WalcostErrorCode = 'LOCK_TIMEOUT'
        export const run = (): Promise<InsertCost> => measureInsertCost({ db, table: 't', count: 10 })
        export { code }`,
      },
      false,
    )
    const errors = result.output.split('\n').filter((line) => /error TS\d+/.test(line))
    expect(errors.filter((line) => !line.startsWith('node_modules/@electric-sql/pglite/'))).toEqual([])
  })

  // run's argument follows db, so the app's code takes it as it is, with no cast.
  const appCode = `import type { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzleNodePostgres } from 'drizzle-orm/node-postgres'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { bigint, doublePrecision, pgTable } from 'drizzle-orm/pg-core'
import { Kysely, PostgresDialect } from 'kysely'
import pg, { type PoolClient } from 'pg'
import { compareMigration, measureInsertCost, measureWriteCost } from 'walcost'

const url = 'postgres://app@localhost/app'
const t = pgTable('t', { id: bigint('id', { mode: 'number' }).primaryKey(), v: doublePrecision('v').notNull() })
interface Row { id: number; v: number }
const rows: Row[] = [{ id: 1, v: 0.5 }]

export async function insertRows(client: PoolClient, batch: Row[]): Promise<void> {
  for (const row of batch) await client.query('insert into t values ($1, $2)', [row.id, row.v])
}

export const repository = () => measureInsertCost({ db: url, table: 't', run: (client) => insertRows(client, rows) })
export const drizzleOverPg = () =>
  measureInsertCost({ db: url, table: 't', run: (client) => drizzleNodePostgres(client).insert(t).values(rows) })
export const drizzleEmbedded = () =>
  measureInsertCost({ setup: '${setup}', table: 't', run: (db) => drizzlePglite(db).insert(t).values(rows) })
export const drizzleOwnPglite = (instance: PGlite) =>
  measureWriteCost({ db: instance, table: 't', run: (db) => drizzlePglite(db).insert(t).values(rows) })
export const kyselyOnePool = (pool: pg.Pool) =>
  compareMigration({
    db: pool,
    table: 't',
    migration: 'create index on t (v)',
    run: (client) =>
      new Kysely<{ t: Row }>({
        dialect: new PostgresDialect({ pool: { connect: async () => client, end: async () => {}, options: { max: 1 } } }),
      })
        .insertInto('t')
        .values(rows)
        .execute(),
  })
export const ownClient = (client: pg.Client) =>
  measureInsertCost({ db: client, table: 't', run: (same: pg.Client) => same.query('insert into t values (1, 2)') })
`

  it('types run from db: a strict TypeScript project of repository, Drizzle and Kysely code compiles with no cast', async () => {
    const result = await typeCheck('app', { 'app.ts': appCode }, true)
    expect(result.output).toBe('')
    expect(result.code).toBe(0)
  })

  it("fails to compile a repository function typed for pg's PoolClient handed the embedded PGlite", async () => {
    const result = await typeCheck(
      'wrong',
      {
        'app.ts': appCode,
        'wrong.ts': `import { measureInsertCost } from 'walcost'
import { insertRows } from './app.js'
export const embedded = () => measureInsertCost({ table: 't', run: (db) => insertRows(db, []) })
`,
      },
      true,
    )
    expect(result.code).not.toBe(0)
    expect(result.output).toMatch(
      /wrong\.ts\(3,\d+\): error TS2345: Argument of type 'PGlite' is not assignable to parameter of type 'PoolClient'/,
    )
  })

  it('works through the command line', async () => {
    const { stdout } = await inProject('npx', [
      'walcost',
      'measure',
      '--setup',
      setup,
      '--table',
      't',
      '--count',
      '50',
      '--json',
    ])
    expect(JSON.parse(stdout).rows).toBe(50)
  })

  it('works through the vitest matcher, failing over budget', async () => {
    await writeFile(
      join(project, 'budget.test.mjs'),
      `import { expect, it } from 'vitest'
      import 'walcost/vitest'
      import { measureInsertCost } from 'walcost'
      const cost = () => measureInsertCost({ setup: '${setup}', table: 't', count: 200 })
      // The first PGlite measurement takes seconds, more on a loaded machine: as the README says, give it room.
      it('stays within', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 10_000 }) }, 120_000)
      it('goes over', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 1 }) }, 120_000)`,
    )
    const result = await inProject('npx', ['vitest', 'run', 'budget.test.mjs']).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        output: error.stdout + error.stderr,
      }),
    )
    expect(result.code).toBe(1)
    expect(result.output).toMatch(/Tests\s+1 failed \| 1 passed/)
    expect(result.output).toContain('over the WAL budget: bytesPerRow')
  })

  it("works under node's own test runner with assertWalBudget, failing over budget", async () => {
    await writeFile(
      join(project, 'budget.node.test.mjs'),
      `import { test } from 'node:test'
      import { assertWalBudget, measureInsertCost } from 'walcost'
      const cost = () => measureInsertCost({ setup: '${setup}', table: 't', count: 200 })
      test('stays within', { timeout: 120_000 }, async () => assertWalBudget(await cost(), { bytesPerRow: 10_000 }))
      test('goes over', { timeout: 120_000 }, async () => assertWalBudget(await cost(), { bytesPerRow: 1 }))`,
    )
    const result = await outcome(process.execPath, ['--test', 'budget.node.test.mjs'], project)
    expect(result.code).toBe(1)
    expect(result.output).toMatch(/# pass 1\n# fail 1/)
    expect(result.output).toContain('over the WAL budget: bytesPerRow')
    expect(result.output).toContain('AssertionError')
  })

  describe('under the jest 30 runner', () => {
    const others = (process.env.NODE_OPTIONS ?? '').replace(/--experimental-vm-modules/g, '').trim()
    // jest's native ESM mode needs --experimental-vm-modules for jest itself; CommonJS runs without it.
    const jest = (dir: string, vmModules: boolean) =>
      outcome(
        process.execPath,
        [join(project, 'node_modules/jest/bin/jest.js'), '--ci', '--cacheDirectory', join(project, '.jest-cache')],
        join(project, dir),
        {
          NODE_OPTIONS: vmModules ? `${others} --experimental-vm-modules`.trim() : others,
        },
      )
    // The app's own write path, as a repository function over the connection walcost lends.
    const budgetTests = (load: string) => `${load}
const setup = '${setup}'
const insertRows = async (db) => { for (let i = 0; i < 200; i++) await db.query('insert into t values ($1, $2)', [i, i / 2]) }
const cost = () => measureInsertCost({ setup, table: 't', run: insertRows })
test('stays within', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 10_000 }) }, 120_000)
test('goes over', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 1 }) }, 120_000)
`
    beforeAll(async () => {
      const projects = [
        [
          'jest-cjs',
          { type: 'commonjs', jest: { setupFilesAfterEnv: ['./jest.setup.js'] } },
          "require('walcost/jest')",
          "const { measureInsertCost } = require('walcost')",
        ],
        [
          'jest-esm',
          { type: 'module', jest: { setupFilesAfterEnv: ['./jest.setup.js'], transform: {} } },
          "import 'walcost/jest'",
          "import { measureInsertCost } from 'walcost'",
        ],
        // An ESM project whose tests babel-jest turns into CommonJS: jest's default, without its ESM mode.
        [
          'jest-esm-babel',
          { type: 'module', jest: { setupFilesAfterEnv: ['./jest.setup.js'] } },
          "import 'walcost/jest'",
          "import { measureInsertCost } from 'walcost'",
        ],
      ] as const
      for (const [dir, manifest, setupLine, load] of projects) {
        await mkdir(join(project, dir))
        await writeFile(join(project, dir, 'package.json'), JSON.stringify(manifest))
        await writeFile(join(project, dir, 'jest.setup.js'), `${setupLine}\n`)
        await writeFile(join(project, dir, 'budget.test.js'), budgetTests(load))
      }
      await writeFile(
        join(project, 'jest-esm-babel', 'babel.config.cjs'),
        "module.exports = { plugins: ['@babel/plugin-transform-modules-commonjs'] }\n",
      )
    })

    it.each(['jest-cjs', 'jest-esm'])('%s: passes within budget and fails over it, with the breakdown', async (dir) => {
      const result = await jest(dir, true)
      expect(result.output).toMatch(/Tests:\s+1 failed, 1 passed, 2 total/)
      expect(result.output).toContain('over the WAL budget: bytesPerRow')
      expect(result.code).toBe(1)
    })

    // jest's own ESM mode needs the flag whatever the tests load; walcost needs none.
    it.each(['jest-cjs', 'jest-esm-babel'])(
      '%s without the flag: the embedded PGlite starts outside the sandbox, and the budgets hold',
      async (dir) => {
        const result = await jest(dir, false)
        expect(result.output).toMatch(/Tests:\s+1 failed, 1 passed, 2 total/)
        expect(result.output).toContain('over the WAL budget: bytesPerRow')
        expect(result.code).toBe(1)
      },
    )
  })

  /** A fenced block of README.md, found by the words just before it, as a user would copy it. */
  const readmeBlock = async (after: string, language: string) => {
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const from = readme.indexOf(after)
    expect(from, `README.md has no "${after}"`).toBeGreaterThanOrEqual(0)
    const block = new RegExp(`\`\`\`${language}\n([\\s\\S]*?)\`\`\``).exec(readme.slice(from))
    return block![1]!
  }

  it.each(backends.map((backend) => backend.name))("runs the README's app test as it stands, on %s", async (name) => {
    await writeFile(join(project, 'readme-app.test.mjs'), await readmeBlock('A test file as it stands', 'js'))
    const result = await outcome(
      'npx',
      ['vitest', 'run', 'readme-app.test.mjs'],
      project,
      name === 'postgres' ? { DATABASE_URL: inject('postgresUrl') } : {},
    )
    expect(result.output).toMatch(/Tests\s+1 passed/)
    expect(result.code, result.output).toBe(0)
  })

  describeOnPostgres('the blocks of docs/ as they stand', () => {
    /** The app's own files the blocks import and name, as a project of one table of orders has them. */
    const APP_FILES: Record<string, string> = {
      'db/schema.sql': `create table orders (id int8 primary key, customer_id int4 not null);
create index orders_customer_idx on orders (customer_id);
`,
      'src/orders.js': `import { bigint, integer, pgTable } from 'drizzle-orm/pg-core'
export const ordersTable = pgTable('orders', {
  id: bigint('id', { mode: 'number' }).primaryKey(),
  customer_id: integer('customer_id').notNull(),
})
export const orders = Array.from({ length: 200 }, (_, i) => ({ id: i + 1, customer_id: i % 20 }))
export const sampleOrders = orders
export async function insertOrders(db, rows) {
  for (const row of rows) await db.query('insert into orders (id, customer_id) values ($1, $2)', [row.id, row.customer_id])
}
`,
    }
    const reading = docBlocks(root)

    it('names every block that is a module of its own, so that it is run below', async () => {
      const unnamed = (await reading).filter((block) => isScript(block) && block.file === null)
      expect(unnamed.map((block) => `${block.doc}:${block.line}`)).toEqual([])
    })

    /**
     * How a user runs a file the docs show: a test by its runner, a script by node, a module of
     * the app's code by walcost measure --run, a config by walcost check.
     */
    const commandFor = (block: DocBlock, folder: string): [string, string[]] | null => {
      const file = block.file as string
      const bin = (name: string) => join(project, 'node_modules/.bin', name)
      if (file === 'walcost.config.json') return [bin('walcost'), ['check']]
      if (!/\.m?js$/.test(file) || /^vitest\.(setup|config)\./.test(file)) return null
      if (/\.test\.m?js$/.test(file))
        return block.text.includes("from 'node:test'")
          ? [process.execPath, ['--test', file]]
          : [bin('vitest'), ['run', file]]
      if (/^export default\b/m.test(block.text))
        return [
          bin('walcost'),
          ['measure', '--setup-file', join(folder, 'db/schema.sql'), '--table', 'orders', '--run', file],
        ]
      return [process.execPath, [file]]
    }

    it.each(['docs/api.md', 'docs/cli.md'])(
      'runs the files %s shows, as written',
      async (doc) => {
        const named = (await reading).filter((block) => block.doc === doc && block.file !== null)
        expect(named.length).toBeGreaterThan(0)
        const folder = join(project, doc.replace(/\W/g, '-'))
        const files = { ...APP_FILES, ...Object.fromEntries(named.map((block) => [block.file as string, block.text])) }
        for (const [file, text] of Object.entries(files)) {
          await mkdir(join(folder, file, '..'), { recursive: true })
          await writeFile(join(folder, file), text)
        }
        // The blocks that read DATABASE_URL get a database of their own, with the app's table; the
        // others run on the embedded default, as the docs run them.
        const database = await openPostgresDatabase(inject('postgresUrl'))
        try {
          await database.exec(APP_FILES['db/schema.sql'] as string)
          for (const block of named) {
            const command = commandFor(block, folder)
            if (!command) continue
            const env = block.text.includes('DATABASE_URL') ? { DATABASE_URL: database.url as string } : {}
            const result = await outcome(command[0], command[1], folder, env)
            expect(result.code, `${block.doc}:${block.line} (${block.file}): ${result.output}`).toBe(0)
          }
        } finally {
          await database.close()
        }
      },
      300_000,
    )
  })

  it("runs the README's first measurement as it stands", async () => {
    await writeFile(join(project, 'readme-first.mjs'), await readmeBlock('## A first measurement', 'js'))
    const result = await outcome(process.execPath, ['readme-first.mjs'], project)
    expect(result.code, result.output).toBe(0)
    expect(result.output).toMatch(/[\d.]+ bytes\/row/)
  })
})
