import { integer, roundOne } from '../core/format.js'
import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import { quoteIdent } from '../measure/catalog.js'
import { maxAlign } from './layout.js'

// Record models of the access methods other than B-tree, from their WAL records (gin/ginxlog.h,
// gist/gistxlog.h, hash/hash_xlog.h): the header (24), the first block reference (20: its header,
// RelFileLocator and block number), a further block of the same relation (8), a short main-data
// header (2).

/** GinPageOpaqueData at the end of a GIN page. */
const GIN_SPECIAL = 8
/** GISTPageOpaqueData at the end of a GiST page. */
const GIST_SPECIAL = 16
/** A hash index tuple holds only the key's 32-bit hash code: an 8-byte header and 4 bytes, MAXALIGNed. */
const HASH_TUPLE = 16
/**
 * A bucket split's records besides the moved tuples: SPLIT_ALLOCATE_PAGE (~71 bytes), SPLIT_PAGE
 * without its image (~120), SPLIT_COMPLETE (~58), SPLIT_CLEANUP (~44), and the overflow page
 * added, squeezed and cleaned around it; about 8 records a split on random keys.
 */
const HASH_SPLIT = { bytes: 350, records: 8 }

/** What a sample of the table says about a GIN index: entries a row, and their tuples' bytes. */
export interface GinShape {
  entriesPerRow: number
  /** Bytes of the entry tuples a row adds (each an 8-byte header and its key, MAXALIGNed). */
  entryBytesPerRow: number
  /** The fastupdate storage parameter (on unless the index turns it off). */
  fastupdate: boolean
  /** gin_pending_list_limit, in bytes: the index's own or the server's. */
  pendingLimitBytes: number
  /** Operator classes whose entries the sample cannot count: one entry a value is assumed. */
  unsampled: string[]
}

/** An index's per-row records, as predictIndex returns them for every access method. */
export interface MethodPrediction {
  bytesPerRow: number
  alignedPerRow: number
  recordsPerRow: number
  tupleSize: number
  splitsPerRow: number
  /** Page images logged by design (not because of a checkpoint), bytes per row. */
  imageBytesPerRow: number
  assumptions: string[]
}

/**
 * GIN with fastupdate (the default): each row's entries go to the pending list, one
 * XLOG_GIN_UPDATE_META_PAGE a row (the metapage and the list's tail: 24 + 20 + 8 + 2 + 88
 * ginxlogUpdateMeta + the entries); a row that does not fit on the tail starts a new list page
 * (XLOG_GIN_INSERT_LISTPAGE, 54 bytes more). Without fastupdate each entry goes straight into the
 * entry tree, estimated as one leaf insert an entry.
 */
export function predictGin(name: string, shape: GinShape, blockSize: number): MethodPrediction {
  const { entriesPerRow: entries, entryBytesPerRow: bytes } = shape
  const assumptions = shape.unsampled.map(
    (opclass) => `${name}: entries of ${opclass} not counted on the sample, one a value assumed`,
  )
  const entryLine = `${name}: GIN, ${roundOne(entries)} entries a row of ${integer(bytes)} bytes on a sample of the table`
  if (!shape.fastupdate) {
    // XLOG_GIN_INSERT on an entry leaf: 24 + 20 + 2 + flags, the offset and the tuple.
    const perEntry = entries > 0 ? bytes / entries : 0
    return {
      bytesPerRow: entries * (50 + perEntry),
      alignedPerRow: entries * maxAlign(50 + perEntry),
      recordsPerRow: entries,
      tupleSize: perEntry,
      splitsPerRow: 0,
      imageBytesPerRow: 0,
      assumptions: [
        ...assumptions,
        `${entryLine}; fastupdate off: one entry-tree insert an entry estimated, posting lists and splits not modelled`,
      ],
    }
  }
  const rowSlots = bytes + LINE_POINTER * entries
  const rowsPerPage = Math.max(1, Math.floor((blockSize - PAGE_HEADER - GIN_SPECIAL) / Math.max(1, rowSlots)))
  const meta = 142 + bytes
  const rowsBeforeFlush = Math.floor(shape.pendingLimitBytes / blockSize) * rowsPerPage
  return {
    bytesPerRow: meta + 54 / rowsPerPage,
    alignedPerRow: maxAlign(meta) + 56 / rowsPerPage,
    recordsPerRow: 1 + 1 / rowsPerPage,
    tupleSize: entries > 0 ? bytes / entries : 0,
    splitsPerRow: 0,
    imageBytesPerRow: 0,
    assumptions: [
      ...assumptions,
      `${entryLine}, written to its pending list; the list moves into the index once it passes gin_pending_list_limit (${integer(shape.pendingLimitBytes / 1024)} kB, about ${integer(rowsBeforeFlush)} rows), a cost not predicted`,
    ],
  }
}

/**
 * GiST: XLOG_GIST_PAGE_UPDATE a row (24 + 20 + 2 + 4 + the leaf tuple). A leaf splits when full
 * (inserts leave no free space), after about ln 2 of a page of rows as for random B-tree keys; the
 * split record carries every tuple of the split page, and the parent takes a downlink update
 * (one tuple deleted, two inserted).
 */
export function predictGist(name: string, tupleSize: number, blockSize: number): MethodPrediction {
  const capacity = Math.floor((blockSize - PAGE_HEADER - GIST_SPECIAL) / (tupleSize + LINE_POINTER))
  const splitsPerRow = 1 / (Math.LN2 * capacity)
  const update = 50 + tupleSize
  const split = 86 + (capacity + 1) * tupleSize
  const downlink = 52 + 2 * tupleSize
  const bytesPerRow = update + splitsPerRow * (split + downlink)
  return {
    bytesPerRow,
    alignedPerRow: maxAlign(update) + splitsPerRow * (maxAlign(split) + maxAlign(downlink)),
    recordsPerRow: 1 + 2 * splitsPerRow,
    tupleSize,
    splitsPerRow,
    imageBytesPerRow: 0,
    assumptions: [
      `${name}: GiST, leaf tuples of ${tupleSize} bytes; parent keys widened by new keys are not counted (a few percent for keys spread over the space)`,
    ],
  }
}

/**
 * Hash: XLOG_HASH_INSERT a row (24 + 20 + 8 for the metapage + 2 + 2 offset + the 16-byte tuple).
 * The index splits a bucket every `ffactor` rows (fillfactor of a page in 20-byte slots). A bucket
 * not yet split holds up to twice that, so a split moves about three quarters of `ffactor` tuples
 * into the new bucket, whose page is logged as an image (XLOG_HASH_SPLIT_PAGE); the old bucket's
 * overflow pages are then squeezed and its moved tuples deleted, about a quarter of a slot a row;
 * and four more small records (allocate, complete, cleanup) come with each split.
 */
export function predictHash(name: string, fillfactor: number, blockSize: number): MethodPrediction {
  const slot = HASH_TUPLE + LINE_POINTER
  const ffactor = Math.floor((blockSize * fillfactor) / 100 / slot)
  const insert = 24 + 20 + 8 + 2 + 2 + HASH_TUPLE
  const bytesPerRow = insert + slot / 4 + HASH_SPLIT.bytes / ffactor
  return {
    bytesPerRow,
    alignedPerRow: maxAlign(insert) + slot / 4 + (HASH_SPLIT.bytes + 4 * HASH_SPLIT.records) / ffactor,
    recordsPerRow: 1 + HASH_SPLIT.records / ffactor,
    tupleSize: HASH_TUPLE,
    splitsPerRow: 1 / ffactor,
    imageBytesPerRow: (3 / 4) * slot,
    assumptions: [
      `${name}: hash, a bucket split every ${ffactor} rows, its new page logged as an image; each tuple moved about once as the index grows`,
    ],
  }
}

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

/**
 * A subquery giving (n, b) for one row of the sample: a GIN column's distinct entries and their
 * tuples' bytes, as the operator class extracts them (ginExtractEntries deduplicates them).
 * `counted` is false for an operator class whose entries the SQL cannot count: one a value is assumed.
 */
export function ginEntriesSql(gin: GinColumn): { sql: string; counted: boolean } {
  const value = gin.expression ? `(${gin.expression})` : quoteIdent(gin.column ?? '')
  const counted = countedEntriesSql(gin, value)
  return counted === null
    ? {
        sql: `select (${value} is not null)::int as n, coalesce(${entryTuple(gin, `pg_column_size(${value})`)}, 0)::int as b`,
        counted: false,
      }
    : { sql: counted, counted: true }
}

/** Bytes an entry tuple of a multi-column GIN index adds before its key: the column number. */
const columnNumberBytes = (indexColumns: number) => (indexColumns > 1 ? 4 : 0)

/** An entry tuple's bytes: an 8-byte header, the column number, the key; MAXALIGNed. */
const entryTuple = (gin: GinColumn, key: string) =>
  `(((8 + ${columnNumberBytes(gin.indexColumns)} + (${key}) + 7) / 8) * 8)`

/** The (n, b) subquery of the operator classes whose entries SQL can count; null for any other. */
function countedEntriesSql(gin: GinColumn, value: string): string | null {
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
      return `select count(*)::int as n, coalesce(sum(${tuple(key)}), 0)::int as b
                from (select distinct e from unnest(${value}) e where e is not null) d`
    }
    case 'jsonb_ops':
      // Keys and scalar values as text after a flag byte; strings over 125 bytes as an 8-digit hash.
      return `select count(*)::int as n, coalesce(sum(${tuple('case when len > 125 then 10 else 2 + len end')}), 0)::int as b
                from (select distinct kind, txt, len from (
                  select 'K' as kind, k #>> '{}' as txt, octet_length(k #>> '{}') as len
                    from jsonb_path_query(${value}, 'strict $.** ? (@.type() == "object").keyvalue().key') k
                  union all
                  select 'V', v #>> '{}', case jsonb_typeof(v) when 'boolean' then 1 when 'null' then 0 else octet_length(v #>> '{}') end
                    from jsonb_path_query(${value}, ${SCALARS}) v) e) d`
    case 'jsonb_path_ops':
      // One 4-byte hash of its path and value a scalar.
      return `select count(*)::int as n, (count(*) * ${tuple('4')})::int as b from jsonb_path_query(${value}, ${SCALARS}) v`
    case 'tsvector_ops':
      return `select count(*)::int as n, coalesce(sum(${tuple('1 + octet_length(lexeme)')}), 0)::int as b from unnest(${value})`
    case 'gin_trgm_ops':
      return `select count(*)::int as n, (count(*) * ${tuple('4')})::int as b from unnest(show_trgm(${value})) t`
    default:
      return null
  }
}

/** The entry a row without any (NULL, or an empty value) still gets: a placeholder of its category. */
export const ginPlaceholderBytes = (indexColumns: number) => maxAlign(8 + columnNumberBytes(indexColumns) + 1)
