import { readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { type Tier, tiers } from '../tiers.js'

const root = new URL('../..', import.meta.url).pathname

/** A glob of the form the tiers use (`dir/**` and `*`) as a regular expression over a path from the root. */
function globPattern(glob: string): RegExp {
  const source = glob
    .split('/')
    .map((part) =>
      part === '**' ? '(?:.+/)?' : `${part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}/`,
    )
    .join('')
  return new RegExp(`^${source.slice(0, -1)}$`)
}

function testFiles(): string[] {
  return (readdirSync(root, { recursive: true }) as string[])
    .filter((path) => !path.split('/').some((part) => part === 'node_modules' || part.startsWith('.')))
    .filter((path) => /\.test\.[cm]?[jt]s$/.test(path))
    .sort()
}

describe('the test tiers', () => {
  const patterns = Object.entries(tiers).map(([tier, globs]) => ({
    tier: tier as Tier,
    regexps: globs.map(globPattern),
  }))
  const tiersOf = (path: string) =>
    patterns.filter(({ regexps }) => regexps.some((regexp) => regexp.test(path))).map(({ tier }) => tier)

  it('put every test file in exactly one tier', () => {
    const files = testFiles()
    expect(files.length).toBeGreaterThan(30)
    const misplaced = files.map((path) => ({ path, tiers: tiersOf(path) })).filter(({ tiers }) => tiers.length !== 1)
    expect(misplaced).toEqual([])
  })

  it('keep the browser test out of npm test, which needs nothing but Node and npm', () => {
    expect(tiersOf('test/browser/report.test.ts')).toEqual(['browser'])
    expect(tiersOf('test/integration/measure.test.ts')).toEqual(['integration'])
    expect(tiersOf('test/stray.test.ts')).toEqual([])
  })
})
