import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const example = (name: string) => new URL(`../../examples/${name}`, import.meta.url).pathname

describe('the examples', () => {
  it('field-notes.mjs measures, predicts within 3% and plans the ceiling', async () => {
    const { stdout } = await run(process.execPath, [example('field-notes.mjs')], { maxBuffer: 4 * 1024 * 1024 })
    const [, errorPct] = /measured [\d.]+ \((-?[\d.]+)%\)/.exec(stdout) ?? []
    expect(Math.abs(Number(errorPct))).toBeLessThan(3)
    expect(stdout).toContain('bound by commit flush latency')
    expect(stdout.match(/\*\*Ingest ceiling/g)).toHaveLength(2)
  })

  it('field-notes.ipynb imports the local build and keeps the outputs of its last run (npm run test:notebook runs it)', async () => {
    const notebook = JSON.parse(await readFile(example('field-notes.ipynb'), 'utf8')) as {
      nbformat: number
      cells: Array<{ cell_type: string; source: string[]; outputs?: Array<{ data?: Record<string, unknown> }> }>
    }
    expect(notebook.nbformat).toBe(4)
    const code = notebook.cells.filter((cell) => cell.cell_type === 'code')
    expect(code[0]?.source.join('')).toContain("from '../dist/index.js'")
    // Every result cell shows a table and a Vega-Lite chart, as executed in a Deno kernel.
    const rendered = code
      .flatMap((cell) => cell.outputs ?? [])
      .filter((output) => output.data?.['application/vnd.vegalite.v5+json'])
    expect(rendered).toHaveLength(4)
    for (const output of rendered) expect([output.data?.['text/html']].flat().join('')).toMatch(/^<div><strong>/)
  })

  it('measure.mjs prints a breakdown', async () => {
    const { stdout } = await run(process.execPath, [example('measure.mjs')])
    expect(stdout).toMatch(/^"public"\."orders": 10,000 rows/)
    expect(stdout).toContain('index orders_customer_idx')
  })
})
