import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, inject, it } from 'vitest'
import { describeOnPostgres, openPostgresDatabase } from '../support/backends.js'

const run = promisify(execFile)
const example = (name: string) => new URL(`../../examples/${name}`, import.meta.url).pathname
const root = new URL('../..', import.meta.url).pathname

describe('the examples', () => {
  it('field-notes.mjs measures, predicts within 3% and plans the ceiling', async () => {
    const { stdout } = await run(process.execPath, [example('field-notes.mjs')], { maxBuffer: 4 * 1024 * 1024 })
    const [, errorPct] = /measured [\d.]+ \((-?[\d.]+)%\)/.exec(stdout) ?? []
    expect(Math.abs(Number(errorPct))).toBeLessThan(3)
    expect(stdout).toContain('bound by commit flush latency')
    expect(stdout.match(/\*\*Ingest ceiling/g)).toHaveLength(2)
  })

  it('field-notes.ipynb imports walcost and keeps the outputs of its last run (npm run test:notebook runs it)', async () => {
    const notebook = JSON.parse(await readFile(example('field-notes.ipynb'), 'utf8')) as {
      nbformat: number
      cells: Array<{ cell_type: string; source: string[]; outputs?: Array<{ data?: Record<string, unknown> }> }>
    }
    expect(notebook.nbformat).toBe(4)
    const code = notebook.cells.filter((cell) => cell.cell_type === 'code')
    // It imports walcost as an app would (in the repository, the package itself, built).
    expect(code[0]?.source.join('')).toContain("from 'walcost'")
    // Every result cell shows a chart and a table, as executed in a Deno kernel: the Vega-Lite chart,
    // and the SVG that an HTML or PDF export shows above the table.
    const rendered = code
      .flatMap((cell) => cell.outputs ?? [])
      .filter((output) => output.data?.['application/vnd.vegalite.v5+json'])
    expect(rendered).toHaveLength(4)
    for (const output of rendered) {
      const svg = [output.data?.['image/svg+xml']].flat().join('')
      expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
      const html = [output.data?.['text/html']].flat().join('')
      expect(html.startsWith(svg)).toBe(true)
      expect(html.slice(svg.length)).toMatch(/^<div><strong>/)
    }
  })

  it('measure.mjs prints a breakdown', async () => {
    const { stdout } = await run(process.execPath, [example('measure.mjs')])
    expect(stdout).toMatch(/^"public"\."orders": 10,000 rows/)
    expect(stdout).toContain('index orders_customer_idx')
  })
})

// The integration tier runs examples/app.test.mjs on the embedded PGlite; with DATABASE_URL it
// measures on that server as well, as an app's CI would run it.
describeOnPostgres('examples/app.test.mjs with DATABASE_URL', () => {
  it('holds the repository function and the Drizzle insert to their budget on a real server', async () => {
    const test = await openPostgresDatabase(inject('postgresUrl'))
    const dir = await mkdtemp(join(tmpdir(), 'walcost-example-'))
    try {
      // A config of its own: the project's would start another PostgreSQL in its global setup.
      const config = join(dir, 'vitest.config.mjs')
      await writeFile(config, `export default { test: { include: ['examples/app.test.mjs'], testTimeout: 120000 } }\n`)
      const vitest = join(root, 'node_modules/vitest/vitest.mjs')
      const { stdout } = await run(
        process.execPath,
        [vitest, 'run', '--root', root, '--config', config, '--reporter', 'verbose'],
        {
          env: { ...process.env, DATABASE_URL: test.url, NO_COLOR: '1' },
          maxBuffer: 4 * 1024 * 1024,
        },
      )
      expect(stdout).toContain("the sessions table on 'DATABASE_URL' > stays within it for the Drizzle insert too")
      expect(stdout).toMatch(/Tests\s+4 passed \(4\)/)
      const [{ n } = { n: '' }] = await test.query<{ n: string }>('select count(*)::text as n from sessions')
      expect(n).toBe('0')
    } finally {
      await rm(dir, { recursive: true, force: true })
      await test.close()
    }
  })
})
