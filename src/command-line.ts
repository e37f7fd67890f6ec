import type { ParseArgsConfig } from 'node:util'
import { z } from 'zod'
import { WalcostError } from './errors.js'

type ParseArgsOptions = NonNullable<ParseArgsConfig['options']>

/** One command-line flag derived from a field of a zod object schema. */
interface Flag {
  field: string
  flag: string
  kind: 'number' | 'boolean' | 'string'
  help: string
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)

/** The object schema behind transforms (a pipe's input). */
function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  let current: z.ZodType = schema
  while (current instanceof z.ZodPipe) current = current.in as z.ZodType
  return current instanceof z.ZodObject ? (current.shape as Record<string, z.ZodType>) : {}
}

/** A field's base type, description and default, through optional/default wrappers. */
function describeField(field: z.ZodType): {
  type: 'number' | 'boolean' | 'string' | 'enum' | 'other'
  description: string
  defaultValue: unknown
  values?: string[]
} {
  const description = field.description ?? ''
  // A default is what the field makes of a missing value.
  const missing = field.safeParse(undefined)
  const defaultValue = missing.success ? missing.data : undefined
  let current: z.ZodType = field
  // Through optional and default wrappers; of a union (SQL text or a function), the first member.
  for (;;) {
    if (current instanceof z.ZodOptional || current instanceof z.ZodDefault) current = current.unwrap() as z.ZodType
    else if (current instanceof z.ZodUnion) current = current.options[0] as z.ZodType
    else break
  }
  if (current instanceof z.ZodNumber) return { type: 'number', description, defaultValue }
  if (current instanceof z.ZodBoolean) return { type: 'boolean', description, defaultValue }
  if (current instanceof z.ZodString) return { type: 'string', description, defaultValue }
  if (current instanceof z.ZodEnum)
    return { type: 'enum', description, defaultValue, values: current.options.map(String) }
  return { type: 'other', description, defaultValue }
}

/**
 * Flags for every number, boolean, string and enum field of the schema except `skip`, with help
 * text taken from the schema's descriptions and defaults: the library's own option definitions.
 */
export function flagsFromSchema(schema: z.ZodType, skip: readonly string[], prefix = ''): Flag[] {
  const flags: Flag[] = []
  for (const [field, definition] of Object.entries(objectShape(schema))) {
    if (skip.includes(field)) continue
    const { type, description, defaultValue, values } = describeField(definition)
    const flag = `${prefix}${kebab(field)}`
    const value = type === 'number' ? ' N' : values ? ` ${values.join('|')}` : type === 'string' ? ' TEXT' : ''
    const fallback = defaultValue === undefined || defaultValue === false ? '' : ` (default ${String(defaultValue)})`
    if (type === 'number' || type === 'boolean' || type === 'string' || type === 'enum') {
      flags.push({
        field,
        flag,
        kind: type === 'enum' ? 'string' : type,
        help: `--${flag}${value}\n      ${description}${fallback}`,
      })
    }
  }
  return flags
}

export function parseArgsOptions(flags: Flag[]): ParseArgsOptions {
  return Object.fromEntries(flags.map((flag) => [flag.flag, { type: flag.kind === 'boolean' ? 'boolean' : 'string' }]))
}

/** Values parsed by parseArgs, as schema input: numbers converted (zod rejects what is not one). */
export function inputFromFlags(flags: Flag[], values: Record<string, unknown>): Record<string, unknown> {
  const input: Record<string, unknown> = {}
  for (const flag of flags) {
    const value = values[flag.flag]
    if (value === undefined) continue
    if (flag.kind !== 'number') input[flag.field] = value
    else if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
      input[flag.field] = Number(value)
    else {
      throw new WalcostError('INVALID_OPTIONS', `--${flag.flag} expects a number, got '${String(value)}'.`, {
        field: flag.field,
      })
    }
  }
  return input
}

/** The flag that stands for a schema field, for error messages. */
export function flagFor(flags: Flag[], field: string | undefined): string | undefined {
  const match = flags.find((flag) => flag.field === field?.split('.')[0])
  return match ? `--${match.flag}` : undefined
}

export type { Flag }

/** A flag given in seconds (`--seconds 2.5`), in milliseconds; undefined when not given. */
export function millisecondsFlag(values: Record<string, unknown>, flag: string): number | undefined {
  const text = values[flag]
  if (typeof text !== 'string') return undefined
  const ms = Math.round(Number(text) * 1000)
  if (text.trim() === '' || !(ms >= 1)) {
    throw new WalcostError('INVALID_OPTIONS', `--${flag} expects a positive number of seconds, got '${text}'.`, {
      field: flag,
    })
  }
  return ms
}
