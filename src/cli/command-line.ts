import type { ParseArgsConfig } from 'node:util'
import { z } from 'zod'
import { WalcostError } from '../core/errors.js'
import { nearest } from '../core/nearest.js'

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

/**
 * `--count -5` as `--count=-5`: parseArgs reads a value that starts with a dash as a missing one, and
 * the schema then says what is wrong with the number.
 */
export function joinNegativeValues(args: string[], valued: Set<string>): string[] {
  const joined: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    const next = args[i + 1]
    if (arg.startsWith('--') && valued.has(arg.slice(2)) && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`)
      i++
    } else joined.push(arg)
  }
  return joined
}

/** A flag that takes one value, given more than once: the last would silently win. */
export function repeatedFlag(
  tokens: ReadonlyArray<{ kind: string; name?: string; value?: string | undefined }>,
  config: ParseArgsOptions,
): string | undefined {
  const seen = new Map<string, string[]>()
  for (const token of tokens) {
    if (token.kind !== 'option' || !token.name || config[token.name]?.multiple) continue
    seen.set(token.name, [...(seen.get(token.name) ?? []), token.value ?? 'given'])
  }
  const [name, values] = [...seen].find(([, given]) => given.length > 1) ?? []
  return name && values ? `--${name} is given ${values.length} times (${values.join(', ')}): give it once` : undefined
}

/** parseArgs's complaint in the CLI's own words, with the nearest flag for a misspelt one. */
export function argumentProblem(error: Error & { code?: string }, known: string[], args: string[]): string {
  const option = /'(-[^' ]*)/.exec(error.message)?.[1]
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
    const typed = option.replace(/^-+/, '')
    const near = nearest(typed, known)
    return `unknown option ${option}${near ? `; did you mean --${near}?` : ''}`
  }
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (/does not take an argument/.test(error.message)) {
      const given = args.find((arg) => arg.startsWith(`${option}=`))?.slice(option.length + 1)
      return `${option} is a yes/no option: give ${option} or --no-${option.slice(2)} (or ${option}=true|false)${given === undefined ? '' : `, not '${given}'`}`
    }
    return `${option} needs a value`
  }
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `unexpected argument: ${error.message.split("'")[1] ?? ''}`
  return error.message
}

/**
 * The library's option names in a message (raise lockTimeoutMs) as the flags the user types (raise
 * --lock-timeout-ms). Only camelCase names: plain words such as table or count are prose too.
 */
export function inFlagWords(message: string, flags: Flag[]): string {
  return flags
    .filter((flag) => /[A-Z]/.test(flag.field))
    .reduce(
      (text, flag) =>
        text.includes(`--${flag.flag}`) ? text : text.replace(new RegExp(`\\b${flag.field}\\b`, 'g'), `--${flag.flag}`),
      message,
    )
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
