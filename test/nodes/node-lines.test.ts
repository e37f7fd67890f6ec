import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = new URL('../..', import.meta.url).pathname

/** The Node.js lines users run, each installed from npm's `node` package into a folder of its own. */
const LINES = [22, 24, 26]

/** Runs a command, resolving with its exit code and output whether or not it failed. */
const outcome = (command: string, args: string[], cwd: string) =>
  run(command, args, {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  }).then(
    ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      output: error.stdout + error.stderr,
    }),
  )

// The packed tarball in one consumer project, run by each Node line's own binary: the README's app
// test under vitest, a budget test under jest (CommonJS) and under node --test, and the CLI.
describe('the packed tarball on every Node line users run', () => {
  let folder: string
  let project: string
  const nodes = new Map<number, string>()

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'walcost-node-lines-'))
    project = join(folder, 'consumer')
    await run('mkdir', ['-p', project])
    await run('npm', ['pack', '--pack-destination', project], { cwd: root })
    const tarball = (await readdir(project)).find((name) => name.endsWith('.tgz'))!
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
    await run(
      'npm',
      ['install', '--no-audit', '--no-fund', `./${tarball}`, 'vitest@4.1.12', 'vite@8.3.8', 'jest@30.5.2'],
      {
        cwd: project,
      },
    )
    for (const line of LINES) {
      const prefix = join(folder, `node${line}`)
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefix', prefix, `node@${line}`])
      nodes.set(line, join(prefix, 'node_modules/.bin/node'))
    }
    const readme = await readFile(join(root, 'README.md'), 'utf8')
    const appTest = /```js\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('A test file as it stands')))![1]!
    await writeFile(join(project, 'readme-app.test.mjs'), appTest)
    const setup = 'create table t (id int8 primary key, v float8 not null)'
    const insertRows = `async (db) => { for (let i = 0; i < 200; i++) await db.query('insert into t values ($1, $2)', [i, i / 2]) }`
    await writeFile(
      join(project, 'budget.node.test.mjs'),
      `import { test } from 'node:test'
      import { assertWalBudget, measureInsertCost } from 'walcost'
      const cost = () => measureInsertCost({ setup: '${setup}', table: 't', run: ${insertRows} })
      test('stays within', { timeout: 120_000 }, async () => assertWalBudget(await cost(), { bytesPerRow: 10_000 }))
      test('goes over', { timeout: 120_000 }, async () => assertWalBudget(await cost(), { bytesPerRow: 1 }))`,
    )
    await run('mkdir', ['-p', join(project, 'jest-cjs')])
    await writeFile(
      join(project, 'jest-cjs', 'package.json'),
      JSON.stringify({ type: 'commonjs', jest: { setupFilesAfterEnv: ['./jest.setup.js'] } }),
    )
    await writeFile(join(project, 'jest-cjs', 'jest.setup.js'), "require('walcost/jest')\n")
    await writeFile(
      join(project, 'jest-cjs', 'budget.test.js'),
      `const { measureInsertCost } = require('walcost')
const cost = () => measureInsertCost({ setup: '${setup}', table: 't', run: ${insertRows} })
test('stays within', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 10_000 }) }, 120_000)
test('goes over', async () => { await expect(cost()).toStayWithinWalBudget({ bytesPerRow: 1 }) }, 120_000)
`,
    )
  }, 600_000)
  afterAll(() => rm(folder, { recursive: true, force: true }))

  describe.each(LINES)('Node %i', (line) => {
    const node = () => nodes.get(line)!

    it('is the line it was installed as', async () => {
      expect((await outcome(node(), ['--version'], project)).output.trim()).toMatch(new RegExp(`^v${line}\\.`))
    })

    it("passes the README's app test under vitest", async () => {
      const result = await outcome(node(), ['node_modules/vitest/vitest.mjs', 'run', 'readme-app.test.mjs'], project)
      expect(result.output).toMatch(/Tests\s+1 passed/)
      expect(result.code, result.output).toBe(0)
    })

    it('holds a budget under jest, failing over it with the breakdown', async () => {
      const result = await outcome(
        node(),
        [join(project, 'node_modules/jest/bin/jest.js'), '--ci', '--cacheDirectory', join(project, '.jest-cache')],
        join(project, 'jest-cjs'),
      )
      expect(result.output).toMatch(/Tests:\s+1 failed, 1 passed, 2 total/)
      expect(result.output).toContain('over the WAL budget: bytesPerRow')
    })

    it('holds a budget under node --test, failing over it', async () => {
      const result = await outcome(node(), ['--test', '--test-reporter=tap', 'budget.node.test.mjs'], project)
      expect(result.output).toMatch(/# pass 1\n# fail 1/)
      expect(result.output).toContain('over the WAL budget: bytesPerRow')
    })

    it('runs the CLI', async () => {
      const result = await outcome(
        node(),
        [
          'node_modules/walcost/dist/cli.js',
          'measure',
          '--setup',
          'create table t (id int8)',
          '--table',
          't',
          '--count',
          '50',
          '--json',
        ],
        project,
      )
      expect(result.code, result.output).toBe(0)
      expect(JSON.parse(result.output).rows).toBe(50)
    })
  })
})
