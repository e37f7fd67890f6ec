import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const script = new URL('../../scripts/cli-help-docs.mjs', import.meta.url).pathname
const outputs = new URL('../../scripts/doc-outputs.mjs', import.meta.url).pathname
const root = new URL('../..', import.meta.url).pathname
const fresh = (path: string, args: string[]) =>
  run(process.execPath, [path, ...args]).then(
    () => 'fresh',
    (error: { stderr: string }) => error.stderr.trim(),
  )

describe('docs/cli.md', () => {
  it("shows each command's --help as the built CLI prints it", async () => {
    expect(await fresh(script, ['--check'])).toBe('fresh')
  })
})

describe('the outputs README.md and docs/ quote', () => {
  it('are what the commands and examples print now', async () => {
    expect(await fresh(outputs, ['--check'])).toBe('fresh')
  })

  it("put the example's own figures in the README's prose", async () => {
    const api = await readFile(`${root}docs/api.md`, 'utf8')
    const readme = await readFile(`${root}README.md`, 'utf8')
    const printed = api.slice(api.indexOf('<!-- output of: node examples/measure.mjs -->'))
    const [, mb, records, images, perRow, times] =
      /WAL ([\d.]+ MB) in ([\d,]+) records, (\d+) full-page images: ([\d.]+) bytes\/row, ([\d.]+)x/.exec(printed) ?? []
    const part = (name: string) =>
      new RegExp(`^${name}\\s+[\\d,]+\\s+([\\d.]+)\\s+\\d+%\\s+([\\d,]+|-)$`, 'm').exec(printed)
    const prose = readme.replace(/\s+/g, ' ')
    expect(prose).toContain(
      `${mb} of WAL in ${records} records with ${images} full-page images: ${perRow} bytes a row, ${times}x`,
    )
    expect(prose).toContain(`the heap takes ${part('heap')?.[1]} (${part('heap')?.[2]} heap records`)
    expect(prose).toContain(`\`orders_customer_idx\` ${part('index orders_customer_idx')?.[1]}`)
    expect(prose).toContain(`\`orders_pkey\` ${part('index orders_pkey')?.[1]}`)
    expect(prose).toContain(`\`orders_id_seq\` ${part('relation orders_id_seq')?.[1]}`)
    expect(prose).toContain(`full-page images ${part('full-page images')?.[1]}`)
    // docs/api.md's own sentences under the output, too.
    const below = printed.slice(printed.indexOf('```', printed.indexOf('```') + 3)).replace(/\s+/g, ' ')
    const other = /of which other activity ([\d,]+)/.exec(printed)?.[1]
    expect(below).toContain(`COPY wrote ${part('heap')?.[2]} heap records for 10,000 rows`)
    expect(below).toContain(`The ${other} bytes of "other activity"`)
  })
})
