import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const example = (name: string) => new URL(`../examples/${name}`, import.meta.url).pathname

describe('the examples', () => {
  it('field-notes.mjs measures, predicts within 3% and plans the ceiling', async () => {
    const { stdout } = await run(process.execPath, [example('field-notes.mjs')], { maxBuffer: 4 * 1024 * 1024 })
    const [, errorPct] = /measured [\d.]+ \((-?[\d.]+)%\)/.exec(stdout) ?? []
    expect(Math.abs(Number(errorPct))).toBeLessThan(3)
    expect(stdout).toContain('bound by commit flush latency')
    expect(stdout.match(/\*\*Ingest ceiling/g)).toHaveLength(2)
  })

  it("field-notes.ipynb is a valid notebook whose cells are the script's code", async () => {
    const notebook = JSON.parse(await readFile(example('field-notes.ipynb'), 'utf8')) as {
      nbformat: number
      cells: Array<{ cell_type: string; source: string[] }>
    }
    const script = await readFile(example('field-notes.mjs'), 'utf8')
    expect(notebook.nbformat).toBe(4)
    const code = notebook.cells
      .filter((cell) => cell.cell_type === 'code')
      .map((cell) => cell.source.join('').replace("'npm:walcost'", "'walcost'"))
    expect(code).toHaveLength(4)
    for (const cell of code) expect(script).toContain(cell)
  })

  it('measure.mjs prints a breakdown', async () => {
    const { stdout } = await run(process.execPath, [example('measure.mjs')])
    expect(stdout).toMatch(/^"public"\."orders": 10,000 rows/)
    expect(stdout).toContain('index orders_customer_idx')
  })
})
