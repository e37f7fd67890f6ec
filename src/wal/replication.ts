import type { Duplex } from 'node:stream'
import { fromServerError, WalcostError } from '../core/errors.js'
import { MIB } from '../core/units.js'
import { formatLsn, parseLsn } from '../decode/reader.js'
import type { ReplicationConnection, Session } from '../driver/types.js'

/**
 * Bytes received and not yet read that the stream holds before it stops reading the socket: the
 * walsender then waits (the slot keeps the WAL), and memory stays flat however far a reader lags.
 */
const HELD_BYTES = 32 * MIB
/**
 * A standby status update at least this often, reading or not: the walsender ends a connection
 * that says nothing for wal_sender_timeout (60 s by default).
 */
const STATUS_INTERVAL_MS = 10_000
/** Microseconds from 1970 to 2000-01-01, PostgreSQL's epoch, in which a status update is timed. */
const POSTGRES_EPOCH_US = 946_684_800_000_000n

/**
 * The WAL of a server as a walsender streams it (pg_receivewal's protocol), on a temporary physical
 * slot of its own: the slot keeps every segment from the stream's start until the reader has been
 * through it, so none is recycled before it is read, and the server drops it with the connection,
 * however that ends. Bytes come in order and are read in order: a read may start no earlier than
 * the page that holds where the last one ended.
 */
export class WalStream {
  /** The bytes held, in order, from `heldFrom` to `received`. */
  private chunks: Uint8Array[] = []
  private heldFrom: number
  private received: number
  /** Where the reader has been through the WAL: reported as flushed, which lets the slot move on. */
  private released: number
  private failure: WalcostError | null = null
  private closing = false
  private paused = false
  private wake: (() => void) | null = null
  private readonly statusTimer: NodeJS.Timeout

  private constructor(
    private readonly connection: ReplicationConnection,
    private readonly copy: Duplex,
    start: number,
    private readonly blockSize: number,
    private readonly stallMs: number,
  ) {
    this.heldFrom = start
    this.received = start
    this.released = start
    copy.on('data', (message: Buffer) => this.onMessage(message))
    copy.on('error', (error: unknown) => this.fail(fromServerError(error, 'streaming the WAL over replication')))
    copy.on('end', () => {
      if (!this.closing)
        this.fail(
          new WalcostError('CONNECTION_FAILED', 'the server ended the replication stream walcost read the WAL from.'),
        )
    })
    this.statusTimer = setInterval(() => this.sendStatus(), STATUS_INTERVAL_MS)
    this.statusTimer.unref()
  }

  /**
   * Opens a replication connection as `session`'s role, makes a temporary slot that reserves WAL,
   * and streams from the page that holds the flushed position, or `from` where that is earlier (a
   * watch that reads on from where it stopped): any window started afterwards lies after it.
   * `stallMs` bounds each wait for bytes the server has not sent.
   */
  static async open(session: Session, stallMs: number, from?: number): Promise<WalStream> {
    if (!session.openReplication)
      throw new WalcostError('UNSUPPORTED_SERVER', 'this connection cannot open a replication connection.')
    const connection = await session.openReplication()
    try {
      // The walsender's pid is an integer the server gave: a name no other live slot has.
      const slot = `walcost_${Math.trunc(connection.pid)}`
      await connection.command(`CREATE_REPLICATION_SLOT ${slot} TEMPORARY PHYSICAL RESERVE_WAL`)
      const [system] = await connection.command<{ timeline: number | string; xlogpos: string }>('IDENTIFY_SYSTEM')
      const [block] = await connection.command<{ block_size: string }>('SHOW block_size')
      const blockSize = Number(block?.block_size)
      if (!system || !(blockSize > 0)) throw new WalcostError('QUERY_FAILED', 'IDENTIFY_SYSTEM returned nothing.')
      const first = Math.min(parseLsn(system.xlogpos), from ?? Number.POSITIVE_INFINITY)
      const start = first - (first % blockSize)
      const copy = connection.copyBoth(
        `START_REPLICATION SLOT ${slot} PHYSICAL ${formatLsn(start)} TIMELINE ${Math.trunc(Number(system.timeline))}`,
      )
      return new WalStream(connection, copy, start, blockSize, stallMs)
    } catch (error) {
      await connection.close()
      throw fromServerError(error, 'starting replication')
    }
  }

  /** The WAL [from, to), in order, as it arrives; a chunk is valid until the stream is closed. */
  async *bytes(from: number, to: number): AsyncIterable<Uint8Array> {
    if (from < this.heldFrom) {
      throw new WalcostError(
        'WAL_UNREADABLE',
        `the WAL from ${formatLsn(from)} was asked for after the replication stream had gone past it (it holds from ${formatLsn(this.heldFrom)}); report this as a walcost bug.`,
      )
    }
    this.drop(from)
    let position = from
    while (position < to) {
      await this.arrival(position)
      const end = Math.min(to, this.received)
      let at = this.heldFrom
      for (const chunk of this.chunks) {
        const chunkEnd = at + chunk.length
        if (chunkEnd > position && at < end)
          yield chunk.subarray(Math.max(0, position - at), Math.min(chunk.length, end - at))
        at = chunkEnd
        if (at >= end) break
      }
      position = end
      // The page that holds the end stays: the next read starts on it.
      this.drop(position - (position % this.blockSize))
    }
  }

  /** The WAL before `lsn` has been read: the slot may let it go. */
  release(lsn: number): void {
    if (lsn <= this.released) return
    this.released = Math.min(lsn, this.received)
    this.sendStatus()
  }

  /** Ends the stream (CopyDone) and the connection, within bounds; the temporary slot goes with it. */
  async close(): Promise<void> {
    this.closing = true
    clearInterval(this.statusTimer)
    this.chunks = []
    if (!this.failure) {
      const ended = new Promise<void>((resolve) => {
        this.copy.once('finish', resolve)
        this.copy.once('error', () => resolve())
        this.copy.once('close', resolve)
      })
      // What the server still sends before its own CopyDone is read and let go.
      this.copy.resume()
      this.copy.end()
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, STATUS_INTERVAL_MS / 5).unref())])
    }
    await this.connection.close()
  }

  private onMessage(message: Buffer): void {
    if (this.closing) return
    const kind = message[0]
    if (kind === 0x77 /* 'w': XLogData */) {
      const dataStart = Number(message.readBigUInt64BE(1))
      if (dataStart !== this.received) {
        this.fail(
          new WalcostError(
            'WAL_UNREADABLE',
            `the replication stream sent WAL from ${formatLsn(dataStart)} where ${formatLsn(this.received)} was next.`,
          ),
        )
        return
      }
      const data = message.subarray(25)
      this.chunks.push(data)
      this.received += data.length
      if (this.received - this.heldFrom >= HELD_BYTES && !this.paused) {
        this.paused = true
        this.copy.pause()
      }
      this.wakeReader()
    } else if (kind === 0x6b /* 'k': keepalive */ && message[17] === 1) {
      this.sendStatus()
    }
  }

  /** Standby status update ('r'): received as written, read-through as flushed and applied. */
  private sendStatus(): void {
    if (this.closing || this.failure) return
    const status = Buffer.alloc(34)
    status[0] = 0x72
    status.writeBigUInt64BE(BigInt(this.received), 1)
    status.writeBigUInt64BE(BigInt(this.released), 9)
    status.writeBigUInt64BE(BigInt(this.released), 17)
    status.writeBigUInt64BE(BigInt(Date.now()) * 1000n - POSTGRES_EPOCH_US, 25)
    this.copy.write(status)
  }

  /** Lets go of the bytes before `lsn`, and reads the socket again once there is room. */
  private drop(lsn: number): void {
    while (this.chunks.length > 0 && lsn > this.heldFrom) {
      const first = this.chunks[0] as Uint8Array
      const cut = Math.min(first.length, lsn - this.heldFrom)
      this.heldFrom += cut
      if (cut === first.length) this.chunks.shift()
      else this.chunks[0] = first.subarray(cut)
    }
    if (this.chunks.length === 0 && lsn > this.heldFrom) this.heldFrom = Math.min(lsn, this.received)
    if (this.paused && this.received - this.heldFrom < HELD_BYTES) {
      this.paused = false
      this.copy.resume()
    }
  }

  /** Waits until a byte at `position` has arrived: each wait for the next message is bounded. */
  private async arrival(position: number): Promise<void> {
    while (this.received <= position) {
      if (this.failure) throw this.failure
      const before = this.received
      let timer: NodeJS.Timeout | undefined
      await new Promise<void>((resolve) => {
        this.wake = resolve
        timer = setTimeout(resolve, this.stallMs)
      })
      clearTimeout(timer)
      this.wake = null
      if (this.failure) throw this.failure
      if (this.received === before) {
        throw new WalcostError(
          'WAL_NOT_FLUSHED',
          `the replication stream sent no WAL past ${formatLsn(before)} within ${this.stallMs} ms, though ${formatLsn(position + 1)} was wanted: the server has not flushed it. Raise flushTimeoutMs (--flush-timeout-ms), or check the WAL writer and synchronous_commit.`,
        )
      }
    }
  }

  private wakeReader(): void {
    this.wake?.()
  }

  private fail(error: WalcostError): void {
    this.failure ??= error
    clearInterval(this.statusTimer)
    this.wakeReader()
  }
}

const streams = new WeakMap<Session, Promise<WalStream | { refused: string } | null>>()

/**
 * Reads of `session`'s WAL go to `stream` once it is open; where it could not be, they go
 * elsewhere, and why it was refused is kept for the advice (see replicationRefusalOf).
 */
export function attachWalStream(session: Session, stream: Promise<WalStream | { refused: string } | null>): void {
  streams.set(session, stream)
}

/** Why the replication connection opened for `session` was refused; null where none was tried or it opened. */
export async function replicationRefusalOf(session: Session): Promise<string | null> {
  const stream = await streams.get(session)
  return stream && !(stream instanceof WalStream) ? stream.refused : null
}

/** The replication stream `session` reads its WAL from; null where there is none. */
export async function walStreamOf(session: Session): Promise<WalStream | null> {
  const stream = await streams.get(session)
  return stream instanceof WalStream ? stream : null
}
