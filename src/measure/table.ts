import type { Session } from '../driver/types.js'
import { WalcostError, fromServerError, sqlStateOf } from '../errors.js'

export interface Column {
  name: string
  /** format_type() of the column, e.g. `timestamp with time zone`, `character varying(20)`. */
  type: string
  /** The base type's name (pg_type.typname), e.g. `timestamptz`, `varchar`, `_int4` for arrays. */
  typeName: string
  notNull: boolean
  /** Has a default, is an identity or a generated column: `count` leaves it to the server. */
  serverFilled: boolean
  /** Belongs to a unique or primary-key index: `count` gives it distinct values. */
  unique: boolean
  /** Average width in bytes from pg_stats, when the table has been analysed. */
  avgWidth: number | null
  attnum: number
  /** pg_attribute.attlen (-1: varlena) and attalign: the column's storage. */
  length: number
  align: 'c' | 's' | 'i' | 'd'
  /** pg_stats: share of NULLs, correlation with the physical order, distinct values (negative: a share of rows). */
  nullFraction: number
  correlation: number | null
  distinct: number | null
}

export interface Index {
  oid: string
  name: string
  definition: string
  /** The constraint it backs (primary key, unique, exclusion), which DROP INDEX cannot drop alone. */
  constraint: string | null
  /** The definition without index and table names: equal for an index and its copy on another table. */
  signature: string
}

export interface Table {
  oid: string
  schema: string
  name: string
  /** Schema-qualified and quoted, safe to put into SQL. */
  quoted: string
  toastOid: string | null
  /** The role owns the table (or is a member of its owner): it may drop its indexes. */
  owned: boolean
  columns: Column[]
  indexes: Index[]
}

/** Quotes an identifier the way PostgreSQL's quote_ident does for any name. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/**
 * Finds the table by PostgreSQL's own reading of `name` (`'...'::regclass`): unquoted parts fold to
 * lower case, double quotes keep case, dots and other characters.
 */
export async function resolveTable(session: Session, name: string): Promise<Table> {
  let rows: Array<{ oid: string; relkind: string; schema: string; name: string; toast: string | null; owned: boolean }>
  try {
    rows = await session.query(
      `select c.oid::text as oid, c.relkind::text as relkind, n.nspname as schema, c.relname as name,
              nullif(c.reltoastrelid, 0)::text as toast, pg_has_role(c.relowner, 'USAGE') as owned
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.oid = $1::regclass`,
      [name],
    )
  } catch (error) {
    const state = sqlStateOf(error)
    if (state === '42P01' || state === '3F000') {
      throw new WalcostError('TABLE_NOT_FOUND', `table ${name} does not exist here (${(error as Error).message}). Check the name and search_path; quote mixed-case names, e.g. '"DeviceMetrics"'.${session.embedded ? ' The embedded database starts empty on every call: create the table with `setup`, or pass `db`.' : ''}`, { cause: error, field: 'table' })
    }
    if (state === '42602' || state === '42601' || state === '22023') {
      throw new WalcostError('INVALID_OPTIONS', `table: ${(error as Error).message}. Give a table name as PostgreSQL reads it, e.g. app.metrics or "Odd Name".`, { cause: error, field: 'table' })
    }
    throw fromServerError(error, `resolving table ${name}`)
  }
  const relation = rows[0]
  if (!relation) throw new WalcostError('TABLE_NOT_FOUND', `table ${name} does not exist here.`, { field: 'table' })
  if (relation.relkind !== 'r') {
    const kind = { p: 'a partitioned table (measure one of its partitions)', v: 'a view', m: 'a materialized view', f: 'a foreign table', i: 'an index', S: 'a sequence' }[relation.relkind] ?? `a relation of kind ${relation.relkind}`
    throw new WalcostError('UNSUPPORTED_TABLE', `${name} is ${kind}; walcost measures inserts into ordinary tables.`, { field: 'table' })
  }
  const [columns, indexes] = [await readColumns(session, relation.oid), await readIndexes(session, relation.oid)]
  return {
    oid: relation.oid,
    schema: relation.schema,
    name: relation.name,
    quoted: `${quoteIdent(relation.schema)}.${quoteIdent(relation.name)}`,
    toastOid: relation.toast,
    owned: relation.owned,
    columns,
    indexes,
  }
}

async function readColumns(session: Session, oid: string): Promise<Column[]> {
  const rows = await session.query<{
    name: string; type: string; type_name: string; not_null: boolean; server_filled: boolean; is_unique: boolean
    attnum: number; length: number; align: Column['align']; avg_width: number | null; null_frac: number | null; correlation: number | null; n_distinct: number | null
  }>(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, t.typname as type_name,
            a.attnotnull as not_null,
            (a.atthasdef or a.attidentity <> '' or a.attgenerated <> '') as server_filled,
            exists (select 1 from pg_index i where i.indrelid = a.attrelid and i.indisunique and a.attnum = any (i.indkey)) as is_unique,
            a.attnum::int as attnum, a.attlen::int as length, a.attalign::text as align,
            s.avg_width, s.null_frac, s.correlation, s.n_distinct
       from pg_attribute a
       join pg_class c on c.oid = a.attrelid
       join pg_namespace n on n.oid = c.relnamespace
       join pg_type t on t.oid = a.atttypid
       left join pg_stats s on s.schemaname = n.nspname and s.tablename = c.relname and s.attname = a.attname and not s.inherited
      where a.attrelid = $1::oid and a.attnum > 0 and not a.attisdropped
      order by a.attnum`,
    [oid],
  )
  const numberOrNull = (value: number | null) => (value === null ? null : Number(value))
  return rows.map((row) => ({
    name: row.name,
    type: row.type,
    typeName: row.type_name,
    notNull: row.not_null,
    serverFilled: row.server_filled,
    unique: row.is_unique,
    avgWidth: numberOrNull(row.avg_width),
    attnum: row.attnum,
    length: row.length,
    align: row.align,
    nullFraction: Number(row.null_frac ?? 0),
    correlation: numberOrNull(row.correlation),
    distinct: numberOrNull(row.n_distinct),
  }))
}

async function readIndexes(session: Session, oid: string): Promise<Index[]> {
  return session.query<{ oid: string; name: string; definition: string; constraint: string | null; signature: string } & Record<string, unknown>>(
    `select i.indexrelid::text as oid, c.relname as name, pg_get_indexdef(i.indexrelid) as definition,
            (select conname from pg_constraint where conindid = i.indexrelid and contype in ('p', 'u', 'x') limit 1) as constraint,
            concat_ws(' ', am.amname, i.indisunique, i.indisprimary, i.indnkeyatts, i.indclass::text, i.indoption::text, i.indcollation::text,
                      (select string_agg(pg_get_indexdef(i.indexrelid, k, true), ', ' order by k) from generate_series(1, i.indnatts) k),
                      pg_get_expr(i.indpred, i.indrelid, true)) as signature
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
      where i.indrelid = $1::oid
      order by c.relname`,
    [oid],
  )
}
