// The compressions archiving tools write WAL with (pgBackRest: gz, lz4, zst, bz2; barman: gzip or
// bzip2 under plain names; WAL-G: lz4, zstd, brotli), told by magic number where the format has one.
import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import type { Transform } from 'node:stream'
import * as zlib from 'node:zlib'

export type Codec = 'gzip' | 'lz4' | 'zstd' | 'bzip2' | 'brotli'

/** The file name extensions the tools give each codec. */
export const CODEC_EXTENSIONS: Readonly<Record<string, Codec>> = {
  gz: 'gzip',
  lz4: 'lz4',
  zst: 'zstd',
  bz2: 'bzip2',
  br: 'brotli',
}

/** Formats a file may hold that walcost does not decode: named in the message that refuses it. */
const FOREIGN_MAGIC: ReadonlyArray<[string, number[]]> = [
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ['snappy (framed)', [0xff, 0x06, 0x00, 0x00, 0x73, 0x4e, 0x61, 0x50, 0x70, 0x59]],
  ['lzop', [0x89, 0x4c, 0x5a, 0x4f]],
]

const startsWith = (head: Uint8Array, bytes: readonly number[]) =>
  head.length >= bytes.length && bytes.every((byte, i) => head[i] === byte)

/** The codec a file's first bytes say, or null: brotli has no magic, WAL's own pages none of these. */
export function codecOfMagic(head: Uint8Array): Codec | null {
  if (startsWith(head, [0x1f, 0x8b])) return 'gzip'
  if (startsWith(head, [0x28, 0xb5, 0x2f, 0xfd])) return 'zstd'
  if (startsWith(head, [0x04, 0x22, 0x4d, 0x18])) return 'lz4'
  // "BZh" and the block size, 1 to 9 hundred kB.
  if (startsWith(head, [0x42, 0x5a, 0x68]) && (head[3] ?? 0) >= 0x31 && (head[3] ?? 0) <= 0x39) return 'bzip2'
  return null
}

/** A format walcost does not decode, by its magic number; null when none is known. */
export function foreignFormatOf(head: Uint8Array): string | null {
  return FOREIGN_MAGIC.find(([, magic]) => startsWith(head, magic))?.[0] ?? null
}

/** What went wrong decoding: the file ended inside the data, the data is damaged, or it is too long. */
export class DecodeFailure extends Error {
  constructor(
    readonly kind: 'cut short' | 'damaged' | 'too long',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** Bytes of the compressed file read at a time by the streaming decoders. */
const CHUNK = 1024 * 1024
const USUAL_SEGMENT = 16 * 1024 * 1024
/** The largest segment initdb makes (--wal-segsize 1024). */
const LARGEST_SEGMENT = 1024 * 1024 * 1024

/**
 * Decompresses `path` into `buffer` (never more: memory stays at one segment whatever the archive)
 * and returns the bytes filled. With `head`, stops once the buffer is full (a first page); without,
 * data that decompresses past the buffer is `too long`.
 */
export async function decompressInto(
  path: string,
  codec: Codec,
  buffer: Uint8Array,
  { head = false }: { head?: boolean } = {},
): Promise<Uint8Array> {
  // lz4 and bzip2 decode whole files (their libraries have no stream), bounded by a segment; a
  // first page of a segment whose size is not known yet is tried at the usual size, then the largest.
  if (codec === 'lz4' || codec === 'bzip2') {
    if (!head) return copied(await wholeFile(path, codec, buffer.length), buffer)
    for (const size of [USUAL_SEGMENT, LARGEST_SEGMENT]) {
      const bytes = await wholeFile(path, codec, size).catch((error: unknown) => {
        if (error instanceof DecodeFailure && error.kind === 'too long' && size < LARGEST_SEGMENT) return null
        throw error
      })
      if (bytes) return copied(bytes.subarray(0, buffer.length), buffer)
    }
  }
  const decoder = await streamingDecoder(codec as 'gzip' | 'zstd' | 'brotli')
  return new Promise<Uint8Array>((resolve, reject) => {
    let filled = 0
    let settled = false
    const source = createReadStream(path, { highWaterMark: CHUNK })
    const finish = (error: unknown) => {
      if (settled) return
      settled = true
      source.destroy()
      decoder.destroy()
      if (error) reject(error)
      else resolve(buffer.subarray(0, filled))
    }
    decoder.on('data', (chunk: Uint8Array) => {
      if (settled) return
      const take = Math.min(chunk.length, buffer.length - filled)
      buffer.set(take === chunk.length ? chunk : chunk.subarray(0, take), filled)
      filled += take
      if (head && filled === buffer.length) finish(null)
      else if (take < chunk.length)
        finish(new DecodeFailure('too long', `it decompresses to more than ${buffer.length} bytes`))
    })
    decoder.on('end', () => finish(null))
    decoder.on('error', (error: Error) => finish(failureOf(error)))
    source.on('error', (error) => finish(error))
    source.pipe(decoder)
  })
}

function copied(bytes: Uint8Array, buffer: Uint8Array): Uint8Array {
  buffer.set(bytes)
  return buffer.subarray(0, bytes.length)
}

/** A decoder's error as a DecodeFailure: the data ended too soon, or it is damaged. */
function failureOf(error: Error): DecodeFailure {
  const code = (error as { code?: unknown }).code
  const cutShort =
    code === 'Z_BUF_ERROR' ||
    /unexpected end|unexpected EOF|BZ_UNEXPECTED_EOF|fill whole buffer|premature end/i.test(error.message)
  if (/BZ_OUTBUFF_FULL/.test(error.message))
    return new DecodeFailure('too long', 'it decompresses to more than a segment', { cause: error })
  return new DecodeFailure(cutShort ? 'cut short' : 'damaged', error.message, { cause: error })
}

type ZstdZlib = { createZstdDecompress?: () => Transform }

/**
 * A stream that decompresses `codec`. zstd is node:zlib's where Node has it (22.15 and later);
 * before, fzstd's, a pure-JavaScript streaming decoder, loaded only then.
 */
async function streamingDecoder(codec: 'gzip' | 'zstd' | 'brotli'): Promise<Transform> {
  if (codec === 'gzip') return zlib.createGunzip()
  if (codec === 'brotli') return zlib.createBrotliDecompress()
  const native = (zlib as unknown as ZstdZlib).createZstdDecompress
  if (typeof native === 'function') return native()
  const { Decompress } = await import('fzstd')
  const { Transform } = await import('node:stream')
  let decoder: InstanceType<typeof Decompress>
  let ended = false
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        decoder.push(chunk)
        done()
      } catch (error) {
        done(error as Error)
      }
    },
    flush(done) {
      try {
        decoder.push(new Uint8Array(0), true)
        done(ended ? null : new Error('unexpected end of zstd data'))
      } catch (error) {
        done(error as Error)
      }
    },
  })
  decoder = new Decompress((data, final) => {
    stream.push(data)
    if (final) ended = true
  })
  return stream
}

let bzip2: Promise<{ decompress(source: Uint8Array, size: number): Uint8Array }> | null = null

/**
 * A whole file decoded at once. lz4: lz4-napi (lz4_flex, prebuilt binaries in npm for each platform),
 * the frame format pgBackRest and WAL-G write. bzip2: @foxglove/wasm-bz2, libbzip2 itself compiled
 * to WebAssembly, loaded once a thread. Neither decodes more than `size` bytes into memory for long:
 * a file that decompresses past it is refused.
 */
async function wholeFile(path: string, codec: 'lz4' | 'bzip2', size: number): Promise<Uint8Array> {
  const handle = await open(path, 'r')
  let compressed: Buffer
  try {
    compressed = await handle.readFile()
  } finally {
    await handle.close()
  }
  try {
    if (codec === 'lz4') {
      const { decompressFrame } = await import('lz4-napi')
      const bytes = await decompressFrame(compressed)
      if (bytes.length > size) throw new DecodeFailure('too long', `it decompresses to more than ${size} bytes`)
      return bytes
    }
    bzip2 ??= import('@foxglove/wasm-bz2').then((module) => module.default.init())
    return (await bzip2).decompress(compressed, size)
  } catch (error) {
    throw error instanceof DecodeFailure ? error : failureOf(error as Error)
  }
}
