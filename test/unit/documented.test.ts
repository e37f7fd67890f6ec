import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import * as walcost from '../../src/index.js'
import * as report from '../../src/report/index.js'
import * as schemas from '../../src/schemas.js'

// docs/api.md is the reference: every runtime export and every result kind is in it, and its
// contents list every section, so that a new export or result cannot ship undocumented.

const root = new URL('../..', import.meta.url).pathname
const api = readFileSync(`${root}docs/api.md`, 'utf8')
const headings = api.split('\n').filter((line) => /^#{2,4} /.test(line))
const words = (text: string) => new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? [])
const inHeadings = words(headings.join(' '))
const schemasSection = api.slice(api.indexOf('## Schemas and types'))
const backticked = new Set([...schemasSection.matchAll(/`([A-Za-z_][A-Za-z0-9_]*)`/g)].map((match) => match[1]))

/** Every `kind: '...'` a result type declares, across src/. */
function resultKinds(): string[] {
  const files = (readdirSync(`${root}src`, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts'))
  const kinds = files.flatMap((file) =>
    [...readFileSync(`${root}src/${file}`, 'utf8').matchAll(/^\s+kind: '([a-z-]+)'$/gm)].map((match) => match[1]),
  )
  return [...new Set(kinds)].sort() as string[]
}

describe('docs/api.md', () => {
  it('documents every runtime export of walcost, walcost/report and walcost/schemas', () => {
    const exported = [...Object.keys(walcost), ...Object.keys(report), ...Object.keys(schemas)]
    const undocumented = exported.filter((name) => !inHeadings.has(name) && !backticked.has(name))
    expect(undocumented).toEqual([])
  })

  it('keeps the root to the entry points, the error class, the budget helpers and formatResult', () => {
    const root = Object.keys(walcost)
    expect(root.filter((name) => name.endsWith('Schema'))).toEqual([])
    expect(root.filter((name) => name in report)).toEqual(['formatResult'])
  })

  it('names every result kind', () => {
    const kinds = resultKinds()
    expect(kinds.length).toBeGreaterThanOrEqual(9)
    expect(kinds.filter((kind) => !api.includes(`'${kind}'`))).toEqual([])
  })

  it('lists every section in its contents', () => {
    const contents = api.slice(api.indexOf('Contents:'), api.indexOf('## Conventions'))
    const anchor = (heading: string) =>
      heading
        .replace(/^#+ /, '')
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replaceAll(' ', '-')
    const sections = headings.filter((line) => line.startsWith('## ')).map(anchor)
    expect(sections.filter((section) => !contents.includes(`(#${section})`))).toEqual([])
  })
})
