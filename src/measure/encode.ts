import type { Column } from './catalog.js'

/**
 * A JavaScript value as PostgreSQL's text input for the column, or null. The same text goes to
 * INSERT parameters and into COPY, so every method inserts exactly the same values.
 */
export function toPgText(value: unknown, column: Column): string | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'string') return value
  if (typeof value === 'number')
    return Number.isFinite(value) ? String(value) : Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity'
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'boolean') return value ? 't' : 'f'
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Uint8Array)
    return `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`
  if (column.typeName === 'json' || column.typeName === 'jsonb') return JSON.stringify(value)
  if (Array.isArray(value)) return arrayLiteral(value, column)
  return JSON.stringify(value)
}

function arrayLiteral(values: unknown[], column: Column): string {
  const items = values.map((item) => {
    if (Array.isArray(item)) return arrayLiteral(item, column)
    const text = toPgText(item, column)
    return text === null ? 'NULL' : `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
  })
  return `{${items.join(',')}}`
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** One row in COPY's text format: tab-separated, \N for null, backslash escapes. */
export function copyLine(values: ReadonlyArray<string | null>): string {
  return `${values.map((value) => (value === null ? '\\N' : value.replace(/[\\\n\r\t]/g, (char) => COPY_ESCAPES[char] ?? char))).join('\t')}\n`
}
