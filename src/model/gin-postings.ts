import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import type { Session } from '../driver/types.js'
import { type GinColumn, ginEntryRowsSql, ginPlaceholderBytes, indexedValue } from './gin-entries.js'
import { maxAlign } from './layout.js'
import { tailStart } from './table-tail.js'

// GIN without a pending list (fastupdate = off): each entry of a new row goes straight into the
// index (ginEntryInsert, gininsert.c). A key seen for the first time gets an entry tuple holding its
// one TID; a key already there has its entry tuple rebuilt with the TID added to its compressed
// posting list, and XLOG_GIN_INSERT carries the whole rebuilt tuple (ginentrypage.c); once the
// tuple would pass GinMaxItemSize the key moves to a posting tree of its own
// (XLOG_GIN_CREATE_PTREE), where a TID appended to a leaf is a few bytes (gindatapage.c:
// GIN_SEGMENT_ADDITEMS). So a row's cost is its keys' posting lists: how many TIDs each key has,
// and how many bytes a TID takes in them (varbyte deltas between TIDs, ginpostinglist.c).

/** Keys of the table's last rows with the same count there, entry tuple and TID deltas. */
export interface GinKeyGroup {
  /** Rows of the window each of these keys is in. */
  occurrences: number
  /** Rows of a sample spread over the table before the window each of these keys is in. */
  spread: number
  /** Keys in the group. */
  keys: number
  /** Each key's entry tuple before its posting list: header, column number and key, MAXALIGNed. */
  tupleBytes: number
  /** Mean bytes of a TID in the key's posting list (its varbyte delta); null for a key seen once. */
  deltaBytes: number | null
}

/** The keys of a GIN index over the table's last pages, where new rows' TIDs follow theirs. */
export interface GinPostings {
  windowRows: number
  windowPages: number
  /** Rows of the sample spread over the table before the window (TABLESAMPLE SYSTEM). */
  spreadRows: number
  /** Rows of the whole table (its estimate), at least the window's. */
  tableRows: number
  groups: GinKeyGroup[]
}

/** What a row's entries cost in the index, from its keys' posting lists. */
export interface GinInsertCost {
  bytesPerRow: number
  alignedPerRow: number
  recordsPerRow: number
  splitsPerRow: number
  /** The split pages' images, logged by every GIN page split. */
  imageBytesPerRow: number
  /** Share of a row's entries that go to a posting tree rather than rewrite an entry tuple. */
  treeShare: number
  /** Mean bytes of the entry tuples rewritten (the posting list they carry). */
  rewrittenTuple: number
}

// A TID in a posting list is the varbyte-encoded difference of (block << 11 | offset) from the
// TID before it (MaxHeapTuplesPerPageBits = 11).
const OFFSET_BITS_VALUE = 2048
/** GinPageOpaqueData at the end of a GIN page. */
export const GIN_SPECIAL = 8
/** A GinPostingList's header: its first TID uncompressed, and its length. */
const POSTING_LIST_HEADER = 8
/** XLOG_GIN_INSERT on a leaf: 24 + 20 block ref + 2 + ginxlogInsert flags 2 + offset, isDelete and padding 4, then the tuple. */
const ENTRY_INSERT = 52
/** XLOG_GIN_INSERT of one TID appended to a posting-tree leaf: 24 + 20 + 2 + 2 + nactions 2 + segment and action 2 + count 2 + the TID 6. */
const TREE_INSERT = 60
/** A posting tree leaf's last segment, compressed, on average: segments are cut at about 256 bytes and grow to 384 (ginpostinglist.c). */
const LAST_SEGMENT = 256
/** GinPostingListSegmentTargetSize. */
const SEGMENT_TARGET = 256
/** XLOG_GIN_CREATE_PTREE: 24 + 20 + 5 + its size field, then the posting lists moved into the tree. */
const CREATE_TREE = 53
/** A split: XLOG_GIN_SPLIT without its images (24 + two block refs with image headers + 2 + 26 ginxlogSplit), and the downlink inserted into the parent (~80). */
const SPLIT_RECORDS = { bytes: 92 + 80, aligned: 96 + 80, records: 2 }
/** A posting-tree leaf that splits while TIDs are appended to it keeps 75% on its left (dataBeginPlaceToPageLeaf). */
const APPEND_SPLIT_FILL = 0.75

/** GinMaxItemSize: the largest entry tuple, a third of a page. */
export const ginMaxItemSize = (blockSize: number) =>
  Math.floor((blockSize - maxAlign(PAGE_HEADER + 3 * 4) - GIN_SPECIAL) / 3 / 8) * 8

/** Bytes of a varbyte-encoded number: 7 bits a byte. */
function varbyteBytes(value: number): number {
  let bytes = 1
  for (let limit = 128; value >= limit && bytes < 7; limit *= 128) bytes++
  return bytes
}

/**
 * Bytes of a TID delta between rows `gap` rows apart, with `rowsPerPage` rows a heap page: within a
 * page the offsets differ by the gap; across pages each page crossed adds 2048.
 */
function gapBytes(gap: number, rowsPerPage: number): number {
  if (gap >= rowsPerPage) return varbyteBytes((gap / rowsPerPage) * OFFSET_BITS_VALUE)
  const crossing = gap / rowsPerPage
  return (1 - crossing) * varbyteBytes(gap) + crossing * varbyteBytes(OFFSET_BITS_VALUE - rowsPerPage + gap)
}

/**
 * Bytes of XLOG_GIN_INSERT adding `tids` TIDs to a posting tree's rightmost leaf. One goes as is
 * (GIN_SEGMENT_ADDITEMS, 6 bytes), and so do more while they take no more room than the segment they
 * join compressed; beyond that the segment is logged whole (GIN_SEGMENT_REPLACE), cut into segments
 * of about 256 bytes once it passes 384, each a further action (gindatapage.c).
 */
function treeInsertBytes(tids: number, delta: number): number {
  const segment = LAST_SEGMENT + tids * delta
  if (6 * tids <= segment) return TREE_INSERT + 6 * (tids - 1)
  const segments = Math.ceil(segment / SEGMENT_TARGET)
  return TREE_INSERT - 8 + segment + (segments - 1) * (2 + POSTING_LIST_HEADER)
}

/**
 * Per row, the records of a GIN index's entries as they reach the tree: for each key of the window,
 * in the share of rows it is in, the rewrite of its entry tuple with the posting list it has in a
 * table of this size (its count in the table from a sample spread over it), or an append to its
 * posting tree; the move of a list into a tree amortised over the TIDs that filled the list; and
 * page splits from the bytes the entry tree and the posting trees grow by, new keys' tuples
 * included. Without a pending list each row's entries go in alone (`rowsTogether` 1); a pending
 * list's merge puts the TIDs of `rowsTogether` rows in at once, one insert a key among them
 * (ginInsertCleanup), so a key in many rows is written once for all of them.
 */
export function predictGinPostings(postings: GinPostings, blockSize: number, rowsTogether = 1): GinInsertCost {
  const { windowRows, windowPages } = postings
  const tableRows = Math.max(postings.tableRows, windowRows)
  const rowsPerPage = windowRows / Math.max(1, windowPages)
  const maxItem = ginMaxItemSize(blockSize)
  let bytes = 0
  let aligned = 0
  let records = 0
  let entries = 0
  let treeEntries = 0
  let rewritten = 0
  let rewrites = 0
  let entryGrowth = 0
  let treeGrowth = 0
  for (const group of postings.groups) {
    // The share of rows each key is in, and the TIDs its keys add a row.
    const inRows = group.occurrences / windowRows
    const share = group.keys * inRows
    // A key's TIDs: the window's, and those before it as the spread sample counts them.
    const before = postings.spreadRows > 0 ? (group.spread * (tableRows - windowRows)) / postings.spreadRows : 0
    // A key is written once for the rows put in together that hold it: its inserts a row. A key the
    // table had before the window recurs over it, in any rows put in together as often as it is in
    // rows; one it had not is new, in a run of rows of its own (a row's own value, a time).
    const inserts =
      before === 0
        ? share / Math.min(group.occurrences, rowsTogether)
        : (group.keys * (rowsTogether > 1 ? 1 - (1 - inRows) ** rowsTogether : inRows)) / rowsTogether
    const tidsEach = share / inserts
    const tids = group.occurrences + before
    const delta = group.deltaBytes ?? gapBytes(windowRows / group.occurrences, rowsPerPage)
    const tuple = maxAlign(group.tupleBytes + POSTING_LIST_HEADER + (tids + tidsEach - 1) * delta)
    entries += share
    if (tuple <= maxItem) {
      // TIDs the list takes before it becomes a tree; the move is its share of each of them.
      const fill = Math.max(1, (maxItem - group.tupleBytes - POSTING_LIST_HEADER) / delta)
      const move = CREATE_TREE + maxItem + ENTRY_INSERT + group.tupleBytes
      bytes += inserts * (ENTRY_INSERT + tuple) + (share * move) / fill
      aligned += inserts * maxAlign(ENTRY_INSERT + tuple) + (share * maxAlign(move)) / fill
      records += inserts + (share * 2) / fill
      rewritten += inserts * tuple
      rewrites += inserts
      // A key the table did not have before the window gets a tuple of its own, once.
      const created =
        before === 0 ? (group.keys / windowRows) * (group.tupleBytes + POSTING_LIST_HEADER + LINE_POINTER) : 0
      entryGrowth += share * delta + created
    } else {
      const insert = treeInsertBytes(tidsEach, delta)
      bytes += inserts * insert
      aligned += inserts * maxAlign(insert)
      records += inserts
      treeEntries += share
      treeGrowth += share * delta
    }
  }
  const usable = blockSize - PAGE_HEADER - GIN_SPECIAL
  // Entry pages fill to ln 2 on average as keys spread over them grow; a posting tree's rightmost leaf splits 75:25.
  const splitsPerRow = entryGrowth / (Math.LN2 * usable) + treeGrowth / (APPEND_SPLIT_FILL * (usable - 8))
  return {
    bytesPerRow: bytes + splitsPerRow * SPLIT_RECORDS.bytes,
    alignedPerRow: aligned + splitsPerRow * SPLIT_RECORDS.aligned,
    recordsPerRow: records + splitsPerRow * SPLIT_RECORDS.records,
    splitsPerRow,
    imageBytesPerRow: splitsPerRow * blockSize,
    treeShare: entries > 0 ? treeEntries / entries : 0,
    rewrittenTuple: rewrites > 0 ? rewritten / rewrites : 0,
  }
}

/** A TID as the number its posting-list encoding takes differences of. */
const tidNumber = (tid: string) =>
  `((${tid}::text::point)[0]::int8 * ${OFFSET_BITS_VALUE} + (${tid}::text::point)[1]::int8)`

/**
 * Reads the keys of a GIN index's columns over the table's last pages (a TID range scan): each
 * key's rows there and the varbyte bytes between its consecutive TIDs, and its rows in a sample of
 * the pages before them (`spreadPercent` of the table, TABLESAMPLE SYSTEM). Null when an operator class's
 * entries cannot be listed in SQL.
 */
export async function sampleGinPostings(
  session: Session,
  table: { oid: string; quoted: string; estimatedRows: number },
  columns: GinColumn[],
  spreadPercent: number,
): Promise<GinPostings | null> {
  const listed = columns.map((column, position) => {
    const rows = ginEntryRowsSql(column)
    if (rows === null) return null
    // A row with no entries (NULL, an empty value) still gets one, under its category's placeholder key.
    const missing = `case when ${indexedValue(column)} is null then 'null' else 'empty' end`
    return `select '${position}=' || r.k as k, r.b from (${rows}) r
            union all select '${position}/' || ${missing}, ${ginPlaceholderBytes(column.indexColumns)}
             where not exists (select from (${rows}) r)`
  })
  if (listed.some((sql) => sql === null)) return null
  const start = await tailStart(session, table)
  // The entry SQL is built from the server's own index definition and quoted column names.
  const groups = await session.query<{
    occurrences: number
    spread: number
    keys: number
    tuple_bytes: number
    delta_bytes: number | null
    window_rows: number
    window_pages: number
    spread_rows: number
  }>(
    `with w as (select ctid as walcost_tid, * from ${table.quoted} where ctid >= $1::tid),
          e as (select w.walcost_tid as tid, x.k, x.b from w cross join lateral (${listed.join(' union all ')}) x),
          d as (select k, b, ${tidNumber('tid')} - lag(${tidNumber('tid')}) over (partition by k order by tid) as delta from e),
          keyed as (select k, count(*)::int as occurrences, max(b)::int as tuple_bytes,
                           avg(case when delta is null then null when delta < 128 then 1 when delta < 16384 then 2 when delta < 2097152 then 3
                                    when delta < 268435456 then 4 else 5 end) as delta_bytes
                      from d group by k),
          s as (select * from ${table.quoted} tablesample system ($2) repeatable (0) where ctid < $1::tid),
          spread as (select x.k, count(*)::int as spread from s cross join lateral (${listed.join(' union all ')}) x group by x.k)
     select occurrences, coalesce(spread, 0) as spread, count(*)::int as keys, tuple_bytes,
            (round(delta_bytes * 8) / 8)::float8 as delta_bytes,
            (select count(*) from w)::int as window_rows,
            (select count(distinct (walcost_tid::text::point)[0]) from w)::int as window_pages,
            (select count(*) from s)::int as spread_rows
       from keyed left join spread using (k)
      group by occurrences, coalesce(spread, 0), tuple_bytes, round(delta_bytes * 8) / 8`,
    [start, spreadPercent],
  )
  const [first] = groups
  if (!first || first.window_rows === 0) return null
  return {
    windowRows: first.window_rows,
    windowPages: first.window_pages,
    spreadRows: first.spread_rows,
    tableRows: table.estimatedRows,
    groups: groups.map((group) => ({
      occurrences: group.occurrences,
      spread: group.spread,
      keys: group.keys,
      tupleBytes: group.tuple_bytes,
      deltaBytes: group.delta_bytes,
    })),
  }
}
