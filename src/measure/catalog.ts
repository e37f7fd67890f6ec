import { fromServerError, sqlStateOf, WalcostError } from '../core/errors.js'
import { nearest } from '../core/nearest.js'
import type { StoredAttribute } from '../decode/heap-inserts.js'
import type { Session } from '../driver/types.js'

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
  /** pg_attribute.attidentity: 'a' (always), 'd' (by default) or '' (none). */
  identity: '' | 'a' | 'd'
  /** A generated column: never inserted into. */
  generated: boolean
  /** Filled from a sequence: an identity, or a default that calls nextval(). */
  sequenced: boolean
  /** Its default calls a volatile function other than nextval() (gen_random_uuid(), random()): COPY then inserts row by row. */
  volatileDefault: boolean
}

export interface Index {
  oid: string
  name: string
  definition: string
  /** The constraint it backs (primary key, unique, exclusion), which DROP INDEX cannot drop alone. */
  constraint: string | null
  /** The definition without index and table names: equal for an index and its copy on another table. */
  signature: string
  /** Access method: btree, gist, gin, hash, brin, ... */
  method: string
  unique: boolean
  /** Column numbers of the key and included columns (0: an expression), key columns first. */
  columns: number[]
  /** How many of `columns` are key columns (the rest are INCLUDE columns). */
  keyCount: number
  /** The index's fillfactor storage parameter, null when it has none. */
  fillfactor: number | null
  /**
   * What dropping it would break: 'primary key', 'unique', 'exclusion', 'replica identity', or
   * 'foreign key lookup' (its leading columns are a foreign key's); null when nothing.
   */
  backs: string | null
  /** Index scans since the statistics were reset (pg_stat_user_indexes.idx_scan). */
  scans: number
  sizeBytes: number
}

/** A foreign key of the table: its columns, in order, and the parent's columns they reference. */
export interface ForeignKey {
  name: string
  columns: string[]
  /** The referenced table, schema-qualified and quoted. */
  parent: string
  parentColumns: string[]
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
  unlogged: boolean
  /** A temporary table: like an unlogged one, its rows and indexes write no WAL. */
  temporary: boolean
  /** Storage parameters as pg_class.reloptions lists them, e.g. `fillfactor=70`. */
  options: string[]
  /** The heap's fillfactor: 100 unless set. */
  fillfactor: number
  /** pg_class.reltuples, 0 before the first VACUUM or ANALYZE. */
  estimatedRows: number
  columns: Column[]
  /** Every attribute of the heap's tuples, attribute 1 first. */
  attributes: StoredAttribute[]
  indexes: Index[]
  foreignKeys: ForeignKey[]
}

/** The table without its indexes and foreign keys: all that a batch of given SQL needs. */
export type TableRelation = Omit<Table, 'indexes' | 'foreignKeys'>

/**
 * The TABLESAMPLE SYSTEM percentage that reads about `rows` rows' worth of the table's pages, from
 * its estimated row count (all of a table never analysed). For predictions, which work from the
 * statistics; what a measurement inserts is read from the rows themselves.
 */
export function samplePercent(table: Pick<Table, 'estimatedRows'>, rows: number): number {
  return table.estimatedRows > 0 ? Math.min(100, (100 * rows) / table.estimatedRows) : 100
}

/** The table's pages as they are on disk (not pg_class.relpages, which ANALYZE and VACUUM set). */
export async function relationPages(session: Session, table: Pick<Table, 'oid'>): Promise<number> {
  const [row] = await session.query<{ pages: string }>(
    `select (pg_relation_size($1::oid) / current_setting('block_size')::int)::text as pages`,
    [table.oid],
  )
  return Number(row?.pages ?? 0)
}

/** Quotes an identifier the way PostgreSQL's quote_ident does for any name. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** Past this many tables a catalog is not searched for a suggestion. */
const SUGGESTION_CANDIDATES = 10_000

/**
 * The table the role can see whose name is nearest to `typed`, as it would write it: bare where
 * search_path finds it, schema-qualified otherwise, quoted where the name needs it. It runs inside
 * the caller's transaction, so its failure (a cancel) is the call's: not caught here.
 */
async function nearestTable(session: Session, typed: string): Promise<string | undefined> {
  const rows = await session.query<{ bare: string; qualified: string; visible: boolean }>(
    `select quote_ident(c.relname) as bare, quote_ident(n.nspname) || '.' || quote_ident(c.relname) as qualified,
            pg_table_is_visible(c.oid) as visible
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema')
        and n.nspname not like 'pg_toast%' and has_schema_privilege(n.oid, 'USAGE')
      limit ${SUGGESTION_CANDIDATES}`,
  )
  // Unquoted, PostgreSQL folds the name to lower case, and so does the comparison.
  const folded = typed.replace(/"([^"]*)"|([^"]+)/g, (_, quoted: string | undefined, bare: string | undefined) =>
    quoted !== undefined ? `"${quoted}"` : (bare ?? '').toLowerCase(),
  )
  // A table off search_path is suggested qualified, for its bare name too.
  const spellings = new Map<string, string>()
  for (const row of rows) spellings.set(row.qualified, row.qualified)
  for (const row of rows) if (!row.visible && !spellings.has(row.bare)) spellings.set(row.bare, row.qualified)
  for (const row of rows) if (row.visible) spellings.set(row.bare, row.bare)
  const found = nearest(folded, [...spellings.keys()])
  return found === undefined ? undefined : spellings.get(found)
}

/** SQL for a relation's fillfactor storage parameter, as int4 or null, from its reloptions. */
const fillfactorOf = (reloptions: string) =>
  `(select substring(o from 'fillfactor=(\\d+)')::int4 from unnest(${reloptions}) o where o like 'fillfactor=%')`

/**
 * Reads the table, its columns (with their statistics) and its indexes (with what each backs and
 * their usage counters) once: every entry point works from this description.
 *
 * Finds the table by PostgreSQL's own reading of `name` (`'...'::regclass`): unquoted parts fold to
 * lower case, double quotes keep case, dots and other characters.
 */
export async function resolveTable(
  session: Session,
  name: string,
  options: { statistics?: boolean } = {},
): Promise<Table> {
  return withKeys(session, await resolveRelation(session, name, options))
}

/** resolveTable without the indexes and foreign keys: two catalog reads fewer. */
export async function resolveRelation(
  session: Session,
  name: string,
  { statistics = true }: { statistics?: boolean } = {},
): Promise<TableRelation> {
  let rows: Array<{
    oid: string
    relkind: string
    schema: string
    name: string
    toast: string | null
    owned: boolean
    unlogged: boolean
    temporary: boolean
    options: string[] | null
    fillfactor: number | null
    estimated_rows: string
  }>
  const lookup = (oid: string) =>
    session.query<(typeof rows)[number]>(
      `select c.oid::text as oid, c.relkind::text as relkind, n.nspname as schema, c.relname as name,
              nullif(c.reltoastrelid, 0)::text as toast, pg_has_role(c.relowner, 'USAGE') as owned,
              c.relpersistence = 'u' as unlogged, c.relpersistence = 't' as temporary, c.reloptions as options, ${fillfactorOf('c.reloptions')} as fillfactor,
              greatest(c.reltuples, 0)::int8::text as estimated_rows
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.oid = ${oid}`,
      [name],
    )
  let near: string | undefined
  try {
    rows = await lookup('to_regclass($1)')
    if (rows.length === 0) {
      // Read while the transaction can still run a statement; the cast then fails with the server's reason.
      near = await nearestTable(session, name)
      rows = await lookup('$1::regclass')
    }
  } catch (error) {
    const state = sqlStateOf(error)
    if (state === '42P01' || state === '3F000') {
      throw new WalcostError(
        'TABLE_NOT_FOUND',
        `table ${name} does not exist here (${(error as Error).message}).${near ? ` Did you mean ${near}?` : ''} Check the name and search_path; quote mixed-case names, e.g. '"DeviceMetrics"'.${session.embedded ? ' The embedded database starts empty on every call: create the table with `setup`, or pass `db`.' : ''}`,
        { cause: error, field: 'table' },
      )
    }
    if (state === '42602' || state === '42601' || state === '22023') {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `table: ${(error as Error).message}. Give a table name as PostgreSQL reads it, e.g. app.metrics or "Odd Name".`,
        { cause: error, field: 'table' },
      )
    }
    throw fromServerError(error, `resolving table ${name}`)
  }
  const relation = rows[0]
  if (!relation) throw new WalcostError('TABLE_NOT_FOUND', `table ${name} does not exist here.`, { field: 'table' })
  if (relation.relkind !== 'r') {
    const kind =
      {
        p: 'a partitioned table (measure one of its partitions)',
        v: 'a view',
        m: 'a materialized view',
        f: 'a foreign table',
        i: 'an index',
        S: 'a sequence',
      }[relation.relkind] ?? `a relation of kind ${relation.relkind}`
    throw new WalcostError('UNSUPPORTED_TABLE', `${name} is ${kind}; walcost measures inserts into ordinary tables.`, {
      field: 'table',
    })
  }
  const { columns, attributes } = await readColumns(session, relation.oid, statistics)
  return {
    oid: relation.oid,
    schema: relation.schema,
    name: relation.name,
    quoted: `${quoteIdent(relation.schema)}.${quoteIdent(relation.name)}`,
    toastOid: relation.toast,
    owned: relation.owned,
    unlogged: relation.unlogged,
    temporary: relation.temporary,
    options: relation.options ?? [],
    fillfactor: relation.fillfactor ?? 100,
    estimatedRows: Number(relation.estimated_rows),
    columns,
    attributes,
  }
}

/** The table with its indexes (what each backs, their usage) and its foreign keys. */
export async function withKeys(session: Session, relation: TableRelation): Promise<Table> {
  const indexes = await readIndexes(session, relation.oid)
  return { ...relation, indexes, foreignKeys: await readForeignKeys(session, relation.oid) }
}

async function readForeignKeys(session: Session, oid: string): Promise<ForeignKey[]> {
  const rows = await session.query<{
    name: string
    columns: string[]
    parent_schema: string
    parent_name: string
    parent_columns: string[]
  }>(
    `select k.conname as name,
            array(select a.attname::text from unnest(k.conkey) with ordinality u(n, i)
                    join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.n order by u.i) as columns,
            pn.nspname as parent_schema, p.relname as parent_name,
            array(select a.attname::text from unnest(k.confkey) with ordinality u(n, i)
                    join pg_attribute a on a.attrelid = k.confrelid and a.attnum = u.n order by u.i) as parent_columns
       from pg_constraint k join pg_class p on p.oid = k.confrelid join pg_namespace pn on pn.oid = p.relnamespace
      where k.conrelid = $1::oid and k.contype = 'f'
      order by k.conname`,
    [oid],
  )
  return rows.map((row) => ({
    name: row.name,
    columns: row.columns,
    parent: `${quoteIdent(row.parent_schema)}.${quoteIdent(row.parent_name)}`,
    parentColumns: row.parent_columns,
  }))
}

/**
 * The table's columns; with `statistics` false, without pg_stats' figures (as for a table never
 * analysed), for callers that do not read them: pg_stats is the slowest view this reads.
 */
async function readColumns(
  session: Session,
  oid: string,
  statistics: boolean,
): Promise<{ columns: Column[]; attributes: StoredAttribute[] }> {
  const rows = await session.query<{
    dropped: boolean
    generated_kind: string
    name: string
    type: string
    type_name: string
    not_null: boolean
    server_filled: boolean
    is_unique: boolean
    attnum: number
    length: number
    align: Column['align']
    avg_width: number | null
    null_frac: number | null
    correlation: number | null
    n_distinct: number | null
    identity: Column['identity']
    generated: boolean
    sequenced: boolean
    volatile_default: boolean
  }>(
    `select a.attname as name, format_type(a.atttypid, a.atttypmod) as type, t.typname as type_name,
            a.attnotnull as not_null,
            (a.atthasdef or a.attidentity <> '' or a.attgenerated <> '') as server_filled,
            exists (select 1 from pg_index i where i.indrelid = a.attrelid and i.indisunique and a.attnum = any (i.indkey)) as is_unique,
            a.attnum::int as attnum, a.attlen::int as length, a.attalign::text as align,
            ${statistics ? 's.avg_width, s.null_frac, s.correlation, s.n_distinct' : 'null::int4 as avg_width, null::float4 as null_frac, null::float4 as correlation, null::float4 as n_distinct'},
            a.attidentity::text as identity, a.attgenerated <> '' as generated,
            a.attisdropped as dropped, a.attgenerated::text as generated_kind,
            (a.attidentity <> '' or coalesce(pg_get_expr(d.adbin, d.adrelid) like 'nextval(%', false)) as sequenced,
            -- Built-in functions are pinned, so pg_depend does not list them: the expression's text is
            -- searched for all volatile functions' names at once, and only where there is a default.
            case when d.adbin is null then false
                 else pg_get_expr(d.adbin, d.adrelid) ~ (
                   select '\\m(' || string_agg(distinct regexp_replace(f.proname, '\\W', '\\\\\\&', 'g'), '|') || ')\\('
                     from pg_proc f where f.provolatile = 'v' and f.proname <> 'nextval') end as volatile_default
       from pg_attribute a
       left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
       join pg_class c on c.oid = a.attrelid
       join pg_namespace n on n.oid = c.relnamespace
       left join pg_type t on t.oid = a.atttypid
       ${statistics ? 'left join pg_stats s on s.schemaname = n.nspname and s.tablename = c.relname and s.attname = a.attname and not s.inherited' : ''}
      where a.attrelid = $1::oid and a.attnum > 0
      order by a.attnum`,
    [oid],
  )
  const numberOrNull = (value: number | null) => (value === null ? null : Number(value))
  const attributes = rows.map((row) => ({
    length: row.length,
    align: row.align,
    counted: !row.dropped && row.generated_kind !== 'v',
    virtual: row.generated_kind === 'v',
  }))
  const columns = rows
    .filter((row) => !row.dropped)
    .map((row) => ({
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
      identity: row.identity,
      generated: row.generated,
      sequenced: row.sequenced,
      volatileDefault: row.volatile_default,
    }))
  return { columns, attributes }
}

async function readIndexes(session: Session, oid: string): Promise<Index[]> {
  const rows = await session.query<{
    oid: string
    name: string
    definition: string
    constraint: string | null
    signature: string
    method: string
    unique: boolean
    columns: string
    key_count: number
    fillfactor: number | null
    backs: string | null
    scans: string
    size_bytes: string
  }>(
    `select i.indexrelid::text as oid, c.relname as name, pg_get_indexdef(i.indexrelid) as definition,
            (select conname from pg_constraint where conindid = i.indexrelid and contype in ('p', 'u', 'x') limit 1) as constraint,
            concat_ws(' ', am.amname, i.indisunique, i.indisprimary, i.indnkeyatts, i.indclass::text, i.indoption::text, i.indcollation::text,
                      (select string_agg(pg_get_indexdef(i.indexrelid, k, true), ', ' order by k) from generate_series(1, i.indnatts) k),
                      pg_get_expr(i.indpred, i.indrelid, true)) as signature,
            am.amname as method, i.indisunique as unique, i.indkey::text as columns, i.indnkeyatts::int as key_count,
            ${fillfactorOf('c.reloptions')} as fillfactor,
            case when i.indisprimary then 'primary key'
                 when exists (select 1 from pg_constraint k where k.conindid = i.indexrelid and k.contype = 'u') then 'unique'
                 when exists (select 1 from pg_constraint k where k.conindid = i.indexrelid and k.contype = 'x') then 'exclusion'
                 when i.indisreplident then 'replica identity'
                 when exists (select 1 from pg_constraint f where f.conrelid = i.indrelid and f.contype = 'f'
                               and (string_to_array(i.indkey::text, ' ')::int2[])[1:cardinality(f.conkey)] @> f.conkey
                               and f.conkey @> (string_to_array(i.indkey::text, ' ')::int2[])[1:cardinality(f.conkey)]) then 'foreign key lookup'
                 when i.indisunique then 'unique'
            end as backs,
            pg_stat_get_numscans(i.indexrelid)::text as scans, pg_relation_size(i.indexrelid)::text as size_bytes
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
      where i.indrelid = $1::oid
      order by c.relname`,
    [oid],
  )
  return rows.map((row) => ({
    oid: row.oid,
    name: row.name,
    definition: row.definition,
    constraint: row.constraint,
    signature: row.signature,
    method: row.method,
    unique: row.unique,
    columns: row.columns.split(' ').map(Number),
    keyCount: row.key_count,
    fillfactor: row.fillfactor,
    backs: row.backs,
    scans: Number(row.scans),
    sizeBytes: Number(row.size_bytes),
  }))
}
