import { WalcostError } from '../core/errors.js'
import { MIB } from '../core/units.js'
import { formatLsn, WalReader, type WalRecord } from '../decode/reader.js'
import type { Session } from '../driver/types.js'
import { type TalliedHeap, WindowTally } from './attribution.js'
import { type SegmentNames, walBytes } from './segments.js'
import { type Server, walLayout } from './server.js'
import { flushesInTransaction, type WalPosition, waitForFlush } from './snapshot.js'

/**
 * Marks the statement that reads the window's end, so that the reading session can tell from
 * its activity (pg_stat_get_activity) whether the writing session has reached it yet.
 */
export const WINDOW_END_MARK = '/* walcost: window end */'

/** Below this many new bytes, the reading session waits for more rather than reading. */
const MIN_READ_BYTES = MIB
/**
 * Each read aims at about this many bytes. Every statement costs both sessions CPU taken from the
 * batch where cores are few (a round trip wakes a process on another core); what is still unread
 * when the batch ends is read after it, so larger reads trade the one for the other.
 */
const READ_TARGET_BYTES = 4 * MIB
/** Bounds on the pause between looks at the written position, whatever the WAL's rate. */
const PAUSE_MS = { min: 10, max: 100 }

/** Where a window ended, and how far the server had written its WAL out to the files by then. */
export interface WindowEnd extends WalPosition {
  written: number
}

/** The session that writes the window: its backend's pid, and the session itself. */
export interface WindowWriter {
  pid: number
  session: Session
}

/** Reads a window's WAL on a second session while the first one writes it. */
export interface WalFollower {
  /** How far the WAL has been read, in bytes from 0/0. */
  readonly position: number
  /** The window ended at `end`: reads the rest once it is written, and gives the tally. */
  finish(end: WindowEnd, timeoutMs: number): Promise<WindowTally>
  /** See RecordFollower.writerFailure. */
  writerFailure(): Promise<unknown>
  /** The batch failed: stops reading; the reading session stays usable. */
  abandon(): Promise<void>
}

/**
 * Starts reading the WAL from `start` on `reader` while `writer` runs its batch, which overlaps the
 * reading with the batch instead of adding it afterwards.
 *
 * Only WAL known to lie before the window's end is read early: a position the server has written
 * (pg_current_wal_lsn(), which the batch's own writes push along as WAL buffers fill), read in one
 * statement; the next, which reads the bytes up to it, returns them only while the writer's
 * activity shows it still short of the statement marked WINDOW_END_MARK. The end is taken after
 * that statement starts, so it lies at or after the position. Anything less certain (activity
 * tracking off, the writer already at the end) stops the early reading: the rest waits for the end.
 */
export function followWal(
  reader: Session,
  server: Server,
  start: WalPosition,
  writer: WindowWriter,
  heap: TalliedHeap | null = null,
): WalFollower {
  const tally = new WindowTally(walLayout(server), heap)
  const following = followRecords(reader, server, start, writer, tally.onRecord)
  return {
    get position() {
      return following.position
    },
    async finish(end, timeoutMs) {
      await following.finish(end, timeoutMs)
      return tally
    },
    writerFailure: () => following.writerFailure(),
    abandon: () => following.abandon(),
  }
}

/** Reads a window's records while it is written, whoever consumes them; see followWal. */
export interface RecordFollower {
  readonly position: number
  /** Aborted once the reading has failed (a segment recycled before it was read): finish() throws why. */
  readonly failed: AbortSignal
  /** The window ended at `end`: reads the rest once it is written. */
  finish(end: WindowEnd, timeoutMs: number): Promise<void>
  /**
   * Why the statements finish() ran on the writing session failed, once they are done (null: they
   * did not, or ran elsewhere). Its transaction is aborted then, and its next statement says only that.
   */
  writerFailure(): Promise<unknown>
  abandon(): Promise<void>
}

/** followWal for any consumer of records: a measurement's tally, an observation's. */
export function followRecords(
  reader: Session,
  server: Server,
  start: WalPosition,
  writer: WindowWriter,
  onRecord: (record: WalRecord) => void,
): RecordFollower {
  const layout = walLayout(server)
  const walReader = new WalReader(layout, start.bytes, null, onRecord)
  let position = walReader.readFrom
  const names: SegmentNames = new Map()
  let stopping = false
  let wake: () => void = () => undefined
  /** Reads on to `to` through `session`; with `onlyIf`, nothing at all unless the server finds it true first. */
  const read = async (to: number, { session = reader, onlyIf }: { session?: Session; onlyIf?: string } = {}) => {
    if (to <= position) return true
    let bytes = 0
    for await (const chunk of walBytes(session, position, to, layout.segmentSize, { names, onlyIf })) {
      walReader.push(chunk)
      bytes += chunk.length
    }
    if (bytes === 0 && onlyIf) return false
    position = to
    return true
  }
  const writerShortOfEnd = writerShortOfEndSql(writer.pid)
  const running = (async () => {
    // Bytes per millisecond the server has been writing, from the last two looks.
    let rate = 0
    let last = { at: performance.now(), written: position }
    while (!stopping) {
      const [row] = await reader.query<{ bytes: string }>(
        `select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as bytes`,
      )
      if (stopping) return
      const look = { at: performance.now(), written: Number(row?.bytes) }
      if (look.written > last.written) rate = (look.written - last.written) / (look.at - last.at)
      last = look
      if (look.written - position >= MIN_READ_BYTES && !(await read(look.written, { onlyIf: writerShortOfEnd }))) return
      const unread = look.written - position + rate * (performance.now() - look.at)
      const pause = rate > 0 ? (READ_TARGET_BYTES - unread) / rate : PAUSE_MS.max
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(Math.max(pause, PAUSE_MS.min), PAUSE_MS.max))
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  })()
  const failing = new AbortController()
  let writerFlush: Promise<void> | null = null
  // Kept until finish() or abandon() asks: a failure while the batch runs must not go unhandled.
  const outcome = running.then(
    () => null,
    (error: unknown) => {
      failing.abort()
      return error
    },
  )
  const stop = async () => {
    stopping = true
    wake()
    const failure = await outcome
    if (failure !== null) throw failure
  }
  return {
    get position() {
      return position
    },
    failed: failing.signal,
    async finish(end, timeoutMs) {
      // Stopping first: the writing session's next statement no longer shows the window's end.
      const stopped = stop()
      // One session asks for the flush of the rest while the other reads what was already written
      // out. 17+ flushes inside a transaction, at once on the writing session, idle now, even while
      // this one is still in a read; before, only a commit flushes, outside the transaction.
      const writerFlushes = flushesInTransaction(server)
      const flushed = writerFlushes
        ? waitForFlush(writer.session, server, end, timeoutMs, true)
        : stopped.then(() => waitForFlush(reader, server, end, timeoutMs, false))
      flushed.catch(() => undefined)
      if (writerFlushes) writerFlush = flushed
      // The writer's flush runs on the measuring session: it is over before the failure goes on, so
      // that none of its statements runs later, unseen, in whatever that session does next.
      await stopped.catch(async (error: unknown) => {
        await flushed.catch(() => undefined)
        throw error
      })
      walReader.endAt(end.bytes)
      const outcomes = await Promise.allSettled([
        read(Math.min(end.written, end.bytes), { session: writerFlushes ? reader : writer.session }),
        flushed,
      ])
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason
      await read(end.bytes)
      walReader.finish()
    },
    async writerFailure() {
      return writerFlush
        ? writerFlush.then(
            () => null,
            (error: unknown) => error,
          )
        : null
    },
    async abandon() {
      await stop().catch(() => undefined)
    },
  }
}

/**
 * The window's end, taken by the statement a follower recognises (WINDOW_END_MARK): where records
 * stop, and how far the server had written WAL out by then.
 */
export async function markWindowEnd(session: Session): Promise<WindowEnd> {
  const [row] = await session.query<{ bytes: string; written: string }>(
    `select ${WINDOW_END_MARK} (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes,
            (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as written`,
  )
  if (!row) throw new WalcostError('QUERY_FAILED', 'pg_current_wal_insert_lsn() returned nothing.')
  // The text from the same call as the bytes: a second call of pg_current_wal_insert_lsn() in the
  // statement may be past the first while other sessions write, and the two would disagree.
  return { lsn: formatLsn(Number(row.bytes)), bytes: Number(row.bytes), written: Number(row.written) }
}

/**
 * True while backend `writerPid` is seen running something other than the window's end statement.
 * Not seen (gone, activity tracking off, another role's backend) is false. Inlined into the read's
 * COPY, which takes no parameters: the pid is an integer the server gave, checked here. The
 * function rather than pg_stat_activity: the view joins two catalogs, planned anew at every read.
 */
function writerShortOfEndSql(writerPid: number): string {
  if (!Number.isSafeInteger(writerPid))
    throw new WalcostError('QUERY_FAILED', `backend pid ${writerPid} is not an integer.`)
  return `exists (select from pg_stat_get_activity(${writerPid}) a
    where a.state <> 'disabled' and strpos(a.query, '${WINDOW_END_MARK}') = 0)`
}
