import { type Index, quoteIdent, type Table } from './catalog.js'

// What decides whether an update can be HOT, from the catalog alone: the columns it sets, and the
// indexes on them. measureWriteCost explains measured updates with it; auditIndexes checks a
// workload's update against each index.

/**
 * The columns the statements set: those of each `UPDATE ... SET a = ..., b = ...` (and of
 * `ON CONFLICT ... DO UPDATE SET`), read simply: names before '=' at the top level of a SET list.
 */
export function setColumnsOf(sql: string): string[] {
  const columns = new Set<string>()
  for (const match of sql.matchAll(/\bset\s+([\s\S]*?)(?:\bwhere\b|\bfrom\b|\breturning\b|;|$)/gi)) {
    for (const assignment of splitTopLevel(match[1] ?? '')) {
      const name = /^\s*("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)\s*=/i.exec(assignment)?.[1]
      if (name) columns.add(name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name.toLowerCase())
    }
  }
  return [...columns]
}

/** Splits on commas outside parentheses and quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let quote: string | null = null
  let current = ''
  for (const char of text) {
    if (quote) quote = char === quote ? null : quote
    else if (char === "'" || char === '"') quote = char
    else if (char === '(') depth += 1
    else if (char === ')') depth -= 1
    else if (char === ',' && depth === 0) {
      parts.push(current)
      current = ''
      continue
    }
    current += char
  }
  return [...parts, current]
}

/** The indexes an update of `columns` touches, split by whether they prevent HOT. */
export interface HotBlockers {
  /** Indexes with a key, included, expression or predicate column the update sets: each forces a non-HOT update. */
  forcing: Index[]
  /** Summarising indexes (BRIN) on set columns: on PostgreSQL 16+ they do not prevent HOT. */
  summarising: Index[]
}

/**
 * The table's indexes on columns an update sets: by key or included column, or, for an expression
 * or a predicate, by the column's name in the index's definition.
 */
export function hotBlockers(table: Table, columns: string[], versionNum: number): HotBlockers {
  const attnums = new Set(
    table.columns.filter((column) => columns.includes(column.name)).map((column) => column.attnum),
  )
  // pg_get_indexdef quotes a name only where it must; a plain name is matched as a whole word.
  const named = (index: Index) =>
    columns.some((column) => {
      return /^[a-z_][a-z0-9_$]*$/.test(column)
        ? wordIn(index.definition, column)
        : index.definition.includes(quoteIdent(column))
    })
  const touched = table.indexes.filter(
    (index) =>
      index.columns.some((attnum) => attnums.has(attnum)) ||
      ((index.columns.includes(0) || /\bwhere\b/i.test(index.definition)) && named(index)),
  )
  // PostgreSQL 16 lets summarising indexes (BRIN) be updated without giving up HOT.
  const summarising = versionNum >= 160_000 ? touched.filter((index) => index.method === 'brin') : []
  return { forcing: touched.filter((index) => !summarising.includes(index)), summarising }
}

/** `word` is a plain identifier: letters, digits, '_' and '$', of which only '$' needs escaping. */
function wordIn(text: string, word: string): boolean {
  return new RegExp(`\\b${word.replace(/\$/g, '\\$')}\\b`).test(text)
}
