import { parseArgs } from 'node:util'
import { describe, expect, it } from 'vitest'
import {
  argumentProblem,
  flagFor,
  flagsFromSchema,
  inFlagWords,
  inputFromFlags,
  joinNegativeValues,
  repeatedFlag,
} from '../../src/cli/command-line.js'
import { scenariosOptionsSchema } from '../../src/compare/scenarios.js'
import { measureOptionsSchema, parseOptions } from '../../src/core/options.js'
import { ceilingOptionsSchema } from '../../src/model/ceiling.js'

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
    expect(flagsFromSchema(scenariosOptionsSchema, []).find((flag) => flag.field === 'perIndex')?.kind).toBe('boolean')
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

describe('a flag the user got wrong, in the words they typed', () => {
  const options = {
    count: { type: 'string' },
    checkpoint: { type: 'boolean' },
    set: { type: 'string', multiple: true },
  } as const
  const problem = (args: string[]) => {
    const joined = joinNegativeValues(args, new Set(['count']))
    try {
      const parsed = parseArgs({ args: joined, options, strict: true, tokens: true })
      return (
        repeatedFlag(parsed.tokens, options) ??
        parseOptions(measureOptionsSchema, {
          table: 't',
          ...inputFromFlags(flagsFromSchema(measureOptionsSchema, []), parsed.values),
        })
      )
    } catch (error) {
      return (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
        ? argumentProblem(error as Error, Object.keys(options), joined)
        : (error as Error).message
    }
  }

  it('reads a negative number as the value it is, for the schema to refuse', () => {
    expect(joinNegativeValues(['--count', '-5', '--checkpoint'], new Set(['count']))).toEqual([
      '--count=-5',
      '--checkpoint',
    ])
    expect(problem(['--count', '-5'])).toBe('count: count must be at least 1.')
  })

  it('says a fraction is not a whole number, not that the option is missing', () => {
    expect(problem(['--count', '10.5'])).toBe('count: expected a whole number, got 10.5.')
  })

  it('says a yes/no flag takes no word, with the ways it does take one', () => {
    expect(problem(['--checkpoint=maybe'])).toBe(
      "--checkpoint is a yes/no option: give --checkpoint or --no-checkpoint (or --checkpoint=true|false), not 'maybe'",
    )
  })

  it('refuses a single-valued flag given twice, and lets a repeatable one repeat', () => {
    expect(problem(['--count', '5', '--count', '7'])).toBe('--count is given 2 times (5, 7): give it once')
    const parsed = parseArgs({ args: ['--set', 'a=1', '--set', 'b=2'], options, strict: true, tokens: true })
    expect(repeatedFlag(parsed.tokens, options)).toBeUndefined()
  })

  it('lists the storage presets for a name that is none of them', () => {
    expect(() => parseOptions(ceilingOptionsSchema, { storage: 'xyz' })).toThrow(
      'storage: expected a preset (gp3, nvme, io2-16k) or { writeMBps, iops, fsyncMs }.',
    )
  })

  it("names the library's options in a message by their flags", () => {
    const flags = flagsFromSchema(measureOptionsSchema, [])
    expect(inFlagWords('a lock was not granted within 5 s; raise lockTimeoutMs or retry.', flags)).toBe(
      'a lock was not granted within 5 s; raise --lock-timeout-ms or retry.',
    )
    // Plain words stay prose, and a message that names the flag already is left alone.
    expect(inFlagWords('the table has no count; minStatsAgeDays, --min-stats-age-days', flags)).toBe(
      'the table has no count; minStatsAgeDays, --min-stats-age-days',
    )
  })
})
