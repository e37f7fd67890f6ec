import { quoteIdent } from '../measure/catalog.js'
import { maxAlign } from './layout.js'

// What a GIN index stores for a row: its operator class's entries (ginExtractEntries), each an
// entry tuple of its own, computed in SQL on the table's rows.

/** A GIN column as the catalog describes it: what the sample needs to count its entries. */
export interface GinColumn {
  /** The column's name, or the key's expression. */
  column: string | null
  expression: string | null
  opclass: string
  /** An array's element type: fixed width (its typlen), a string (text, varchar, bytea), or another varlena. */
  element: number | 'string' | 'varlena' | null
  /** Columns in the index: entries of a multi-column index carry the column number. */
  indexColumns: number
}

const SCALARS = `'strict $.** ? (@.type() != "object" && @.type() != "array")'`

/** The indexed value of a GIN column, as SQL on the table's row. */
export const indexedValue = (gin: GinColumn) => (gin.expression ? `(${gin.expression})` : quoteIdent(gin.column ?? ''))

/**
 * A subquery giving (n, b) for one row of the sample: a GIN column's distinct entries and their
 * tuples' bytes, as the operator class extracts them (ginExtractEntries deduplicates them).
 * `counted` is false for an operator class whose entries the SQL cannot count: one a value is assumed.
 */
export function ginEntriesSql(gin: GinColumn): { sql: string; counted: boolean } {
  const value = indexedValue(gin)
  const entries = ginEntryRowsSql(gin)
  return entries === null
    ? {
        sql: `select (${value} is not null)::int as n, coalesce(${entryTuple(gin, `pg_column_size(${value})`)}, 0)::int as b`,
        counted: false,
      }
    : { sql: `select count(*)::int as n, coalesce(sum(b), 0)::int as b from (${entries}) entries`, counted: true }
}

/** Bytes an entry tuple of a multi-column GIN index adds before its key: the column number. */
const columnNumberBytes = (indexColumns: number) => (indexColumns > 1 ? 4 : 0)

/** An entry tuple's bytes before its posting list: an 8-byte header, the column number, the key; MAXALIGNed. */
const entryTuple = (gin: GinColumn, key: string) =>
  `(((8 + ${columnNumberBytes(gin.indexColumns)} + (${key}) + 7) / 8) * 8)`

/**
 * A subquery giving one row (k, b) for each entry of one row's value: the key as text (equal keys,
 * equal text) and its entry tuple's bytes before the posting list; null for an operator class whose
 * entries SQL cannot list.
 */
export function ginEntryRowsSql(gin: GinColumn): string | null {
  const value = indexedValue(gin)
  const tuple = (key: string) => entryTuple(gin, key)
  // A string key under 127 bytes is stored with a 1-byte header.
  const stringKey = (datum: string) =>
    `case when octet_length(${datum}) < 127 then 1 else 4 end + octet_length(${datum})`
  switch (gin.opclass) {
    case 'array_ops': {
      const key =
        typeof gin.element === 'number'
          ? String(gin.element)
          : gin.element === 'string'
            ? stringKey('e')
            : 'pg_column_size(e)'
      return `select e::text as k, ${tuple(key)} as b
                from (select distinct e from unnest(${value}) e where e is not null) d`
    }
    case 'jsonb_ops':
      // Keys and scalar values as text after a flag byte; strings over 125 bytes as an 8-digit hash.
      return `select kind || txt as k, ${tuple('case when len > 125 then 10 else 2 + len end')} as b
                from (select distinct kind, txt, len from (
                  select 'K' as kind, k #>> '{}' as txt, octet_length(k #>> '{}') as len
                    from jsonb_path_query(${value}, 'strict $.** ? (@.type() == "object").keyvalue().key') k
                  union all
                  select 'V', v #>> '{}', case jsonb_typeof(v) when 'boolean' then 1 when 'null' then 0 else octet_length(v #>> '{}') end
                    from jsonb_path_query(${value}, ${SCALARS}) v) e) d`
    case 'jsonb_path_ops':
      // One 4-byte hash of its path and value a scalar (the value's text stands for the key).
      return `select v::text as k, ${tuple('4')} as b from jsonb_path_query(${value}, ${SCALARS}) v`
    case 'tsvector_ops':
      return `select lexeme as k, ${tuple('1 + octet_length(lexeme)')} as b from unnest(${value})`
    case 'gin_trgm_ops':
      return `select t as k, ${tuple('4')} as b from unnest(show_trgm(${value})) t`
    default:
      return null
  }
}

/** The entry a row without any (NULL, or an empty value) still gets: a placeholder of its category. */
export const ginPlaceholderBytes = (indexColumns: number) => maxAlign(8 + columnNumberBytes(indexColumns) + 1)
