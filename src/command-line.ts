import type { ParseArgsConfig } from 'node:util'
import type { z } from 'zod'

type ParseArgsOptions = NonNullable<ParseArgsConfig['options']>

/** One command-line flag derived from a field of a zod object schema. */
interface Flag {
  field: string
  flag: string
  kind: 'number' | 'boolean' | 'string'
  help: string
}

const kebab = (name: string) => name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)

/** The object schema behind refinements and transforms. */
function objectShape(schema: z.ZodType): Record<string, z.ZodType> {
  let current = schema as unknown as { def: { type: string; in?: z.ZodType; innerType?: z.ZodType }; shape?: Record<string, z.ZodType> }
  while (!current.shape && current.def.in) current = current.def.in as unknown as typeof current
  return current.shape ?? {}
}

/** A field's base type, description and default, through optional/default wrappers. */
function describeField(field: z.ZodType): { type: string; description: string; defaultValue: unknown; values?: string[] } {
  let current = field as unknown as { def: { type: string; innerType?: unknown; defaultValue?: unknown; entries?: Record<string, string>; options?: unknown[] }; description?: string }
  const description = current.description ?? ''
  let defaultValue: unknown
  // Through optional and default wrappers; of a union (SQL text or a function), the first member.
  while (current.def.type === 'optional' || current.def.type === 'default' || current.def.type === 'union') {
    if (current.def.type === 'default') defaultValue = current.def.defaultValue
    current = (current.def.type === 'union' ? current.def.options?.[0] : current.def.innerType) as typeof current
  }
  return { type: current.def.type, description, defaultValue, values: current.def.entries ? Object.values(current.def.entries) : undefined }
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
      flags.push({ field, flag, kind: type === 'enum' ? 'string' : type, help: `--${flag}${value}\n      ${description}${fallback}` })
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
    input[flag.field] = flag.kind === 'number' ? Number(value) : value
  }
  return input
}

/** The flag that stands for a schema field, for error messages. */
export function flagFor(flags: Flag[], field: string | undefined): string | undefined {
  const match = flags.find((flag) => flag.field === field?.split('.')[0])
  return match ? `--${match.flag}` : undefined
}

export type { Flag }
