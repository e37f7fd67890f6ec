import { BLOCK_SIZE } from '../core/units.js'
import type { Session } from '../driver/types.js'
import { type Column, quoteIdent, samplePercent, type Table } from '../measure/catalog.js'
import type { GinShape } from './gin.js'
import { type GinColumn, ginEntriesSql, ginPlaceholderBytes } from './gin-entries.js'
import { sampleGinPostings } from './gin-postings.js'
import { gistCapacity } from './gist.js'
import { ASCENDING_LEAF_SHARE, type RangeArrival, sampleRangeArrival } from './gist-ranges.js'
import { maxAlign } from './layout.js'

// What a table's catalog statistics cannot say and its indexes' models need, read in one scan of a
// sample of the table (and, for GIN and GiST on ranges, of its last rows).

/** Values stored out of line (TOAST) a row, and their stored bytes. */
export interface ToastShare {
  valuesPerRow: number
  bytesPerRow: number
}

// A value is stored out of line when, compressed, it is still over about this size (TOAST_TUPLE_TARGET).
const TOAST_EXTERNAL_BYTES = 2000

/** What a sample of the table says about each index, beyond the catalog's statistics. */
export interface SampledIndex {
  /** A partial index's share of rows: its predicate on the sample. */
  predicateShare?: number
  /** Average pg_column_size of each expression key, in key order. */
  expressionWidths: Array<number | null>
  gin?: GinShape
  /** A GiST index's stored key width per column, where its operator class names one (point: a 32-byte box). */
  gistKeyLengths?: Array<number | null>
  /** A GiST index led by a range: how its ranges arrive. */
  rangeArrival?: RangeArrival
}

export interface TableSample {
  indexes: Map<string, SampledIndex>
  /** Values stored out of line (TOAST) a row, and their stored bytes: what avg_width (a pointer's 18 bytes) hides. */
  toast: ToastShare
}

/** Rows of the table a sample reads, in pages' worth (TABLESAMPLE SYSTEM, repeatable). */
const SAMPLE_ROWS = 5_000

/** The key columns of the table's GIN and GiST indexes, with their operator classes. */
async function invertedAndSpatialKeys(session: Session, table: Table) {
  return session.query<{
    oid: string
    method: string
    columns: number
    column: string | null
    expression: string | null
    opclass: string
    element_length: number | null
    element_string: boolean | null
    key_length: number | null
    fastupdate: boolean
    pending_limit: string
    work_mem: string
  }>(
    `select i.indexrelid::text as oid, am.amname::text as method, i.indnkeyatts::int as columns, a.attname::text as column,
            case when k.attnum = 0 then pg_get_indexdef(i.indexrelid, k.position::int, true) end as expression,
            opc.opcname::text as opclass, et.typlen::int as element_length,
            (et.typcategory = 'S' or et.oid = 'bytea'::regtype) as element_string,
            case when opc.opckeytype <> 0 then kt.typlen::int end as key_length,
            not exists (select 1 from unnest(c.reloptions) o where o ~* '^fastupdate=(off|of|false|fals|fal|fa|f|no|n|0)$') as fastupdate,
            coalesce((select pg_size_bytes(substring(o from '=(.*)$') || 'kB') from unnest(c.reloptions) o where o like 'gin_pending_list_limit=%'),
                     pg_size_bytes(current_setting('gin_pending_list_limit')))::text as pending_limit,
            pg_size_bytes(current_setting('work_mem'))::text as work_mem
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
       cross join lateral unnest(i.indkey::int2[], i.indclass::oid[]) with ordinality as k(attnum, opclass_oid, position)
       join pg_opclass opc on opc.oid = k.opclass_oid
       left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum and k.attnum > 0
       left join pg_type at on at.oid = a.atttypid
       left join pg_type et on et.oid = at.typelem and at.typcategory = 'A'
       left join pg_type kt on kt.oid = opc.opckeytype
      where i.indrelid = $1::oid and am.amname in ('gin', 'gist') and k.position <= i.indnkeyatts
      order by i.indexrelid, k.position`,
    [table.oid],
  )
}

/** GiST operator classes of ranges and multiranges, whose keys are the values' bounds. */
const RANGE_OPCLASSES = new Set(['range_ops', 'multirange_ops'])

/** An index key as SQL on the table's row: its column, or its expression. */
const keyValue = (key: { column: string | null; expression: string | null }) =>
  key.expression ? `(${key.expression})` : quoteIdent(key.column ?? '')

/** Rows before a range that a leaf's key (and a parent's) covers, from the key's width in the table's statistics. */
function rangeWindows(table: Table, key: { column: string | null }) {
  const width = table.columns.find((column) => column.name === key.column)?.avgWidth ?? 32
  const leafRows = ASCENDING_LEAF_SHARE * gistCapacity(maxAlign(8 + width), BLOCK_SIZE)
  return { leafRows, treeRows: 10 * leafRows }
}

/**
 * One scan of a sample of the table for what the catalog's statistics cannot say: each partial
 * index's predicate, each expression key's width, each GIN column's entries, and the values stored
 * out of line.
 */
export async function sampleTable(session: Session, table: Table): Promise<TableSample> {
  const shapes = await session.query<{ oid: string; predicate: string | null; expressions: string[] }>(
    `select i.indexrelid::text as oid, pg_get_expr(i.indpred, i.indrelid, true) as predicate,
            array(select pg_get_indexdef(i.indexrelid, k, true) from generate_series(1, i.indnatts) k
                   where i.indkey[k - 1] = 0 order by k) as expressions
       from pg_index i where i.indrelid = $1::oid`,
    [table.oid],
  )
  const keys = await invertedAndSpatialKeys(session, table)
  const gins = keys.filter((key) => key.method === 'gin')
  const ginColumns = gins.map(
    (key): GinColumn => ({
      column: key.column,
      expression: key.expression,
      opclass: key.opclass,
      element:
        key.element_length === null
          ? null
          : key.element_length > 0
            ? key.element_length
            : key.element_string
              ? 'string'
              : 'varlena',
      indexColumns: key.columns,
    }),
  )
  const entries = ginColumns.map(ginEntriesSql)
  const varlena = table.columns.filter((column) => column.length < 0)
  const stored = (column: Column) => `pg_column_size(${quoteIdent(column.name)})`
  const external = table.toastOid === null ? [] : varlena.map((column) => `${stored(column)} > ${TOAST_EXTERNAL_BYTES}`)
  // Predicates, expressions and GIN keys are the server's own SQL (pg_get_expr, pg_get_indexdef) on the table's columns.
  const measures = [
    'count(*)::float8 as n',
    ...(external.length > 0
      ? [
          `(${external.map((test) => `count(*) filter (where ${test})`).join(' + ')})::float8 as toast_values`,
          `(${external.map((test, i) => `coalesce(sum(${stored(varlena[i] as Column)}) filter (where ${test}), 0)`).join(' + ')})::float8 as toast_bytes`,
        ]
      : []),
    ...shapes.flatMap((shape, i) => [
      ...(shape.predicate ? [`count(*) filter (where ${shape.predicate})::float8 as p${i}`] : []),
      ...shape.expressions.map((expression, k) => `avg(pg_column_size((${expression})))::float8 as e${i}_${k}`),
    ]),
    ...gins.flatMap((key, g) => [
      `avg(greatest(g${g}.n, 1))::float8 as gn${g}`,
      `avg(case when g${g}.n = 0 then ${ginPlaceholderBytes(key.columns)} else g${g}.b end)::float8 as gb${g}`,
    ]),
  ]
  const [row] = await session.query<Record<string, number | null>>(
    `select ${measures.join(', ')} from ${table.quoted} tablesample system ($1) repeatable (0)${entries.map(({ sql }, g) => ` cross join lateral (${sql}) g${g}`).join('')}`,
    [samplePercent(table, SAMPLE_ROWS)],
  )
  const rows = row?.n ?? 0
  const perRow = (name: string) => (rows > 0 ? (row?.[name] ?? 0) / rows : 0)
  const indexes = new Map<string, SampledIndex>()
  for (const [i, shape] of shapes.entries()) {
    const own = keys.filter((key) => key.oid === shape.oid)
    const ginIndexColumns = gins.flatMap((key, g) => (key.oid === shape.oid ? [g] : []))
    const first = own[0]
    // What a row costs in the tree, alone or in a pending list's merge, depends on its keys' posting lists: read on the table's end.
    const postings =
      first?.method === 'gin'
        ? await sampleGinPostings(
            session,
            table,
            ginIndexColumns.map((g) => ginColumns[g] as GinColumn),
            samplePercent(table, SAMPLE_ROWS),
          )
        : null
    const rangeArrival =
      first?.method === 'gist' && RANGE_OPCLASSES.has(first.opclass)
        ? await sampleRangeArrival(session, table, keyValue(first), rangeWindows(table, first))
        : undefined
    indexes.set(shape.oid, {
      ...(shape.predicate && rows > 0 && { predicateShare: perRow(`p${i}`) }),
      expressionWidths: shape.expressions.map((_, k) => row?.[`e${i}_${k}`] ?? null),
      ...(first?.method === 'gin' && {
        gin: {
          entriesPerRow: ginIndexColumns.reduce((sum, g) => sum + (row?.[`gn${g}`] ?? 1), 0),
          entryBytesPerRow: ginIndexColumns.reduce((sum, g) => sum + (row?.[`gb${g}`] ?? 0), 0),
          fastupdate: first.fastupdate,
          pendingLimitBytes: Number(first.pending_limit),
          mergeMemoryBytes: Number(first.work_mem),
          unsampled: ginIndexColumns.flatMap((g) => (entries[g]?.counted ? [] : [gins[g]?.opclass ?? ''])),
          postings,
        },
      }),
      ...(first?.method === 'gist' && { gistKeyLengths: own.map((key) => key.key_length) }),
      ...(rangeArrival && { rangeArrival }),
    })
  }
  return { indexes, toast: { valuesPerRow: perRow('toast_values'), bytesPerRow: perRow('toast_bytes') } }
}
