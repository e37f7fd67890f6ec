import { fromServerError, sqlStateOf, WalcostError } from '../core/errors.js'
import { MIB } from '../core/units.js'
import { binaryCopyFields } from '../decode/copy-binary.js'
import { formatLsn } from '../decode/reader.js'
import type { Session } from '../driver/types.js'
import { walStreamOf } from './replication.js'

/**
 * Bytes a read asks for at once. The server copies each one several times on its way out (file,
 * bytea, COPY buffer, socket); at 256 kB those copies stay in the processor's cache: a COPY of 16 MB
 * of WAL cost the server 3-4 ms in 256 kB reads and 18-26 ms in 1 MB reads (PostgreSQL 18, 2 cores).
 */
const READ_BYTES = MIB / 4

/** One read: `length` bytes at `offset` of segment number `segment` (its start over the segment size). */
interface SegmentRead {
  segment: number
  offset: number
  length: number
}

/** The reads that cover [from, to), in order, none crossing a segment boundary. */
export function segmentReads(from: number, to: number, segmentSize: number): SegmentRead[] {
  const reads: SegmentRead[] = []
  for (let position = from; position < to; ) {
    const segmentStart = position - (position % segmentSize)
    const length = Math.min(READ_BYTES, to - position, segmentStart + segmentSize - position)
    reads.push({ segment: segmentStart / segmentSize, offset: position - segmentStart, length })
    position += length
  }
  return reads
}

/** Segment names by segment number, kept across the reads of one window: each is asked for once. */
export type SegmentNames = Map<number, string>

export interface WalBytesOptions {
  /** The segments named by earlier reads of the same window; this read adds its own. */
  names?: SegmentNames
  /** A condition (SQL, no parameters) the server checks in the reading statement: false reads nothing. */
  onlyIf?: string | undefined
}

/**
 * The WAL bytes [from, to), streamed in order: from the replication stream the session reads
 * through (wal/replication.ts), from PGlite's in-process file system, or from a real server through
 * COPY of pg_read_binary_file (pg decodes query results as text, which would mangle bytea; a binary
 * COPY streams it as it is). A chunk is valid until the next is asked for.
 */
export async function* walBytes(
  session: Session,
  from: number,
  to: number,
  segmentSize: number,
  { names = new Map(), onlyIf }: WalBytesOptions = {},
): AsyncIterable<Uint8Array> {
  const stream = await walStreamOf(session)
  if (stream) {
    if (onlyIf !== undefined) {
      const [row] = await session.query<{ allowed: boolean }>(`select ${onlyIf} as allowed`)
      if (!row?.allowed) return
    }
    yield* stream.bytes(from, to)
    return
  }
  const reads = segmentReads(from, to, segmentSize)
  if (reads.length === 0) return
  const unnamed = [...new Set(reads.map((read) => read.segment))].filter((segment) => !names.has(segment))
  if (unnamed.length > 0) {
    try {
      // pg_walfile_name names the segment of the byte before its argument: one byte in, the segment's own.
      const rows = await session.query<{ name: string }>(
        `select pg_walfile_name(lsn) as name from unnest($1::pg_lsn[]) with ordinality as read(lsn, n) order by n`,
        [unnamed.map((segment) => formatLsn(segment * segmentSize + 1))],
      )
      for (const [i, segment] of unnamed.entries()) names.set(segment, rows[i]?.name ?? '')
    } catch (error) {
      throw fromServerError(error, 'naming the WAL segments to read')
    }
  }
  if (session.readDataFile) {
    const [directory] = await session.query<{ path: string; allowed: boolean }>(
      `select current_setting('data_directory') as path, ${onlyIf ?? 'true'} as allowed`,
    )
    if (!directory?.allowed) return
    // One buffer for every read: allocating a window's worth again would cost as much as parsing it.
    const buffer = new Uint8Array(READ_BYTES)
    for (const read of reads) {
      const path = `${directory.path}/pg_wal/${names.get(read.segment)}`
      yield session.readDataFile(path, read.offset, buffer.subarray(0, read.length))
    }
    return
  }
  if (!session.copyOut) throw new WalcostError('UNSUPPORTED_SERVER', 'this connection cannot stream the WAL back.')
  // COPY takes no parameters: the segment names come from the server and are checked to be the 24
  // hex digits it always makes; offsets and lengths are integers computed here.
  const rows = reads.map((read, i) => {
    const name = names.get(read.segment) ?? ''
    if (!/^[0-9A-F]{24}$/.test(name))
      throw new WalcostError('WAL_UNREADABLE', `the server named a WAL segment ${JSON.stringify(name)}.`)
    return `(${i}, 'pg_wal/${name}', ${read.offset}::int8, ${read.length}::int8)`
  })
  const copy = `copy (select pg_read_binary_file(path, "offset", length) from (values ${rows.join(', ')}) as read(n, path, "offset", length)
    where ${onlyIf ?? 'true'} order by n) to stdout (format binary)`
  try {
    yield* binaryCopyFields(session.copyOut(copy))
  } catch (error) {
    // undefined_file: the segment was removed or recycled before it was read.
    if (sqlStateOf(error) === '58P01') throw removedSegmentError(error)
    throw fromServerError(error, 'reading the WAL back with pg_read_binary_file')
  }
}

/** A segment removed (a checkpoint recycled it) before it was read, with what keeps the WAL until it is. */
export function removedSegmentError(error: unknown): WalcostError {
  return new WalcostError(
    'WAL_UNREADABLE',
    `a WAL segment was removed before walcost read it (${error instanceof Error ? error.message : String(error)}): nothing is reported from it. A checkpoint recycled it. walcost keeps the WAL it still has to read with a temporary replication slot where the role may make one: ALTER ROLE the_role REPLICATION (and leave a slot free under max_replication_slots), or raise wal_keep_size above the WAL the server writes between two reads.`,
    { cause: error },
  )
}
