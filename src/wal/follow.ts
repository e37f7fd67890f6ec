import type { Session } from '../driver/types.js'
import { type TalliedHeap, WindowTally } from './attribution.js'
import { WalReader } from './reader.js'
import { walBytes } from './segments.js'
import { type Server, walLayout } from './server.js'
import { type WalPosition, waitForFlush } from './snapshot.js'

/**
 * Marks the statement that reads the window's end, so that the reading session can tell from
 * pg_stat_activity whether the writing session has reached it yet.
 */
export const WINDOW_END_MARK = '/* walcost: window end */'

/** Below this many new bytes, the reading session waits for more rather than reading. */
const MIN_READ_BYTES = 1024 * 1024
const POLL_MS = 10

/** Reads a window's WAL on a second session while the first one writes it. */
export interface WalFollower {
  /** How far the WAL has been read, in bytes from 0/0. */
  readonly position: number
  /** The window ended at `end`: reads the rest once it is written, and gives the tally. */
  finish(end: WalPosition, timeoutMs: number): Promise<WindowTally>
  /** The batch failed: stops reading; the reading session stays usable. */
  abandon(): Promise<void>
}

/**
 * Starts reading the WAL from `start` on `reader` while the session with backend `writerPid` runs
 * its batch, which overlaps the reading with the batch instead of adding it afterwards.
 *
 * Only WAL known to lie before the window's end is read early: a position the server has written
 * (pg_current_wal_lsn(), which the batch's own writes push along as WAL buffers fill), read before
 * pg_stat_activity shows the writer still short of the statement marked WINDOW_END_MARK. The end
 * is taken after that statement starts, so it lies at or after any such position. Anything less
 * certain (activity tracking off, the writer already at the end) waits for the end.
 */
export function followWal(
  reader: Session,
  server: Server,
  start: WalPosition,
  writerPid: number,
  heap: TalliedHeap | null = null,
): WalFollower {
  const layout = walLayout(server)
  const tally = new WindowTally(layout, heap)
  const walReader = new WalReader(layout, start.bytes, null, tally.onRecord)
  let position = walReader.readFrom
  let stopping = false
  let wake: () => void = () => undefined
  const read = async (to: number) => {
    for await (const chunk of walBytes(reader, position, to, layout.segmentSize)) walReader.push(chunk)
    position = to
  }
  const running = (async () => {
    while (!stopping) {
      const safe = await writtenBeforeEnd(reader, writerPid)
      if (stopping) return
      if (safe !== null && safe - position >= MIN_READ_BYTES) {
        await read(safe)
        continue
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  })()
  // Kept until finish() or abandon() asks: a failure while the batch runs must not go unhandled.
  const outcome = running.then(
    () => null,
    (error: unknown) => error,
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
    async finish(end, timeoutMs) {
      await stop()
      await waitForFlush(reader, server, end, timeoutMs, false)
      walReader.endAt(end.bytes)
      await read(end.bytes)
      walReader.finish()
      return tally
    },
    async abandon() {
      await stop().catch(() => undefined)
    },
  }
}

/**
 * The server's write position, when it is certain to lie before the window's end: read before
 * pg_stat_activity shows the writer still running something other than the end's statement.
 */
async function writtenBeforeEnd(reader: Session, writerPid: number): Promise<number | null> {
  const [written] = await reader.query<{ bytes: string }>(
    `select (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as bytes`,
  )
  const [writer] = await reader.query<{ state: string | null; query: string | null }>(
    'select state, query from pg_stat_activity where pid = $1',
    [writerPid],
  )
  // No row: the writer is gone, and its own statement fails with the reason.
  if (!written || !writer) return null
  const tracked = writer.state !== null && writer.state !== 'disabled' && writer.query !== null
  return tracked && !writer.query?.includes(WINDOW_END_MARK) ? Number(written.bytes) : null
}
