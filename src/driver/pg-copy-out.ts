import type pg from 'pg'
import { COPY_STALL_MS } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'

/**
 * Bytes of COPY data held for a consumer that is behind before the socket is paused: one read of
 * WAL (256 kB) and then some, so that the server keeps sending while the last chunk is parsed.
 */
const HIGH_WATER_BYTES = 1024 * 1024

/**
 * COPY ... TO STDOUT on a pg client, through pg's own message parser: pg hands each CopyData
 * message to the active query (handleCopyData), and the socket stays in the flowing mode pg runs
 * it in, paused and resumed for backpressure. pg-copy-streams' COPY TO instead takes the socket
 * over in paused mode ('readable' and read()) and gives it back; under Deno's node:net a COPY that
 * follows another on the same connection, with no other statement between, then never sees a
 * byte (Deno 2.9: 'readable' is not emitted again), and the caller waits forever.
 */
export class CopyOutQuery implements pg.Submittable {
  readonly text: string
  private connection: pg.Connection | undefined
  private readonly chunks: Buffer[] = []
  private heldBytes = 0
  private paused = false
  private done = false
  private failure: unknown = undefined
  /** Set once the consumer has left: the rest of the COPY is read and dropped, so pg's state moves on. */
  private discarding = false
  private wake: () => void = () => undefined

  constructor(text: string) {
    this.text = text
  }

  submit(connection: pg.Connection): void {
    this.connection = connection
    connection.query(this.text)
  }

  handleCopyData(message: { chunk: Buffer }): void {
    if (this.discarding) return
    // pg's parser reuses its buffer for the next messages: the chunk outlives this call, so it is copied.
    this.chunks.push(Buffer.from(message.chunk))
    this.heldBytes += message.chunk.length
    if (this.heldBytes >= HIGH_WATER_BYTES && !this.paused) {
      this.paused = true
      this.connection?.stream.pause()
    }
    this.wake()
  }

  handleCommandComplete(): void {}

  /** pg calls this after CommandComplete; on an error it calls handleError instead, and not this. */
  handleReadyForQuery(): void {
    this.finish(undefined)
  }

  handleError(error: unknown): void {
    this.finish(error)
  }

  /** The COPY's data, chunk by chunk, as it arrives; leaving early drops the rest of it. */
  async *chunksOf(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const chunk = this.chunks.shift()
        if (chunk) {
          this.heldBytes -= chunk.length
          if (this.paused && this.heldBytes < HIGH_WATER_BYTES / 2) this.resume()
          yield chunk
          continue
        }
        if (this.done) {
          if (this.failure !== undefined) throw this.failure
          return
        }
        await this.nextMessage()
      }
    } finally {
      this.discarding = true
      this.chunks.length = 0
      this.resume()
    }
  }

  /** Waits for pg to hand over the next message, within COPY_STALL_MS. */
  private async nextMessage(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      await new Promise<void>((resolve, reject) => {
        this.wake = resolve
        timer = setTimeout(() => reject(stalled()), COPY_STALL_MS)
      })
    } finally {
      clearTimeout(timer)
    }
  }

  private finish(failure: unknown): void {
    this.done = true
    this.failure = failure
    this.resume()
    this.wake()
  }

  private resume(): void {
    if (!this.paused) return
    this.paused = false
    this.connection?.stream.resume()
  }
}

/** The runtime this process runs on, by name and version, for a message that may depend on it. */
function runtime(): string {
  const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno?.version?.deno
  if (deno) return `Deno ${deno}`
  const bun = (process.versions as { bun?: string }).bun
  return bun ? `Bun ${bun}` : `Node ${process.version}`
}

function stalled(): WalcostError {
  return new WalcostError(
    'CONNECTION_FAILED',
    `no byte of a COPY (the WAL read back) arrived on the connection for ${COPY_STALL_MS / 1000} s, on ${runtime()}: the connection or this runtime's sockets stopped delivering, and walcost gave the connection up rather than wait on. Check that the server is up (pg_stat_activity shows the reading session idle if it sent everything), then measure again; report it with the runtime's version if it repeats.`,
  )
}
