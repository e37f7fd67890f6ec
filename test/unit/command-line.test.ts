import { describe, expect, it } from 'vitest'
import { flagFor, flagsFromSchema, inputFromFlags } from '../../src/cli/command-line.js'
import { compareOptionsSchema } from '../../src/compare/scenarios.js'
import { measureOptionsSchema } from '../../src/core/options.js'

describe('flags from the library schemas', () => {
  const flags = flagsFromSchema(measureOptionsSchema, ['db', 'rows', 'signal', 'dropIndexes'])

  it('derives a flag, its kind, its help and its default from each field', () => {
    const batchSize = flags.find((flag) => flag.field === 'batchSize')
    expect(batchSize).toMatchObject({ flag: 'batch-size', kind: 'number' })
    expect(batchSize?.help).toMatch(/--batch-size N[\s\S]*\(default 1000\)/)
    expect(flags.find((flag) => flag.field === 'method')?.help).toContain('--method insert|multirow|copy')
    expect(flags.find((flag) => flag.field === 'checkpoint')?.kind).toBe('boolean')
    expect(flags.map((flag) => flag.field)).not.toContain('db')
  })

  it('reads through a schema with refinements', () => {
    expect(flagsFromSchema(compareOptionsSchema, []).find((flag) => flag.field === 'perIndex')?.kind).toBe('boolean')
  })

  it('turns parsed values into schema input, and refuses a number that is not one', () => {
    expect(inputFromFlags(flags, { count: '100', table: 't', checkpoint: true })).toEqual({
      count: 100,
      table: 't',
      checkpoint: true,
    })
    expect(() => inputFromFlags(flags, { count: 'abc' })).toThrow("--count expects a number, got 'abc'.")
    expect(flagFor(flags, 'batchSize')).toBe('--batch-size')
  })
})
