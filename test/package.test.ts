import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
import { describe, expect, inject, it } from 'vitest'

const run = promisify(execFile)
const cli = new URL('../dist/cli.js', import.meta.url).pathname

/** Runs the built CLI; resolves with its exit code and output whether it succeeded or not. */
async function walcost(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...process.env, DATABASE_URL: '' } })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string }
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr }
  }
}

describe('the built package', () => {
  it('measures from the ESM build', async () => {
    const { measureInsertCost } = await import('../dist/index.js')
    const cost = await measureInsertCost({ setup: 'create table t (id int8 primary key)', table: 't', count: 100 })
    expect(cost.rows).toBe(100)
  })

  it('measures from the CommonJS build', async () => {
    const require = createRequire(import.meta.url)
    const { measureInsertCost, WalcostError } = require('../dist/index.cjs') as typeof import('../src/index.js')
    const cost = await measureInsertCost({ setup: 'create table t (id int8 primary key)', table: 't', count: 100, method: 'copy' })
    expect(cost.rows).toBe(100)
    await expect(measureInsertCost({ table: 't' })).rejects.toBeInstanceOf(WalcostError)
  })
})

describe('the walcost command', () => {
  it('prints the field notes experiment as a table against a real server', async () => {
    const { code, stdout } = await walcost('demo', '--url', inject('postgresUrl'), '--prefill', '20000', '--rows', '5000')
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^scenario\s+rows\s+WAL records/)
    expect(lines.slice(2, 5).map((line) => line.split(/\s{2,}/)[0])).toEqual(['after-checkpoint', 'steady', 'no-indexes'])
    expect(lines.at(-1)).toMatch(/^index maintenance is \d+% of WAL/)
  })

  it('prints the results as JSON with --json', async () => {
    const { code, stdout } = await walcost('demo', '--json', '--url', inject('postgresUrl'), '--prefill', '20000', '--rows', '5000')
    expect(code).toBe(0)
    const comparison = JSON.parse(stdout) as { scenarios: Record<string, { rows: number }>; decomposition: { summary: string } }
    expect(Object.values(comparison.scenarios).map((cost) => cost.rows)).toEqual(Array(6).fill(5_000))
    expect(comparison.decomposition.summary).toContain('index')
  })

  it('exits 2 with usage for an unknown command, and with the error code for a bad connection', async () => {
    const unknown = await walcost('frobnicate')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('usage: walcost')
    const unreachable = await walcost('demo', '--url', 'postgres://nobody:secret@127.0.0.1:1/none')
    expect(unreachable.code).toBe(2)
    expect(unreachable.stderr).toContain('CONNECTION_FAILED')
    expect(unreachable.stderr).not.toContain('secret')
    const badRows = await walcost('demo', '--rows', 'lots')
    expect(badRows.code).toBe(2)
    expect(badRows.stderr).toContain('INVALID_OPTIONS')
  })
})
