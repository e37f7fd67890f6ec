// biome-ignore-all lint/style/noNonNullAssertion: indices are bounded by the loops and the tables have 16 x 256 entries; checks in the per-record loop would cost time for nothing.
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as PostgreSQL's COMP_CRC32C computes it.
// Slicing by 16 (tables for 16 bytes at a time): about four times the speed of a byte at a time,
// which matters where every byte of an archive is checked.
//
// Every value is a signed 32-bit integer until crc32cFinish: the tables and words are Int32Arrays,
// and the running CRC starts at -1 (~0). A Uint32Array's entries and `>>> 0` results above 2^31 are
// not small integers to V8, and Node 20 deoptimised the loop on them ("not a Smi") and at times
// reoptimised it several times slower (98-175 MB/s on WAL-sized records against 400-700).

import { createRequire } from 'node:module'

const TABLES = (() => {
  const tables = new Int32Array(16 * 256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1
    tables[n] = c
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 16; k++) {
      const previous = tables[(k - 1) * 256 + n]!
      tables[k * 256 + n] = (previous >>> 8) ^ tables[previous & 0xff]!
    }
  }
  return tables
})()

/** Words of the last buffer seen: records come from a few buffers, and a view a call would cost more than the CRC of a small record. */
let wordsOf: ArrayBufferLike | null = null
let words: Int32Array<ArrayBufferLike> = new Int32Array(0)

/** Folds `bytes[from, to)` into a running CRC; start with CRC32C_START and finish with crc32cFinish. */
export function crc32cUpdate(crc: number, bytes: Uint8Array, from = 0, to = bytes.length): number {
  const t = TABLES
  let c = crc | 0
  let i = from
  // Words are read where they are aligned in the buffer's memory: up to three bytes first.
  while (i < to && ((bytes.byteOffset + i) & 3) !== 0) c = t[(c ^ bytes[i++]!) & 0xff]! ^ (c >>> 8)
  if (to - i >= 16) {
    if (wordsOf !== bytes.buffer) {
      wordsOf = bytes.buffer
      words = new Int32Array(bytes.buffer, 0, bytes.buffer.byteLength >>> 2)
    }
    const first = (bytes.byteOffset + i) >>> 2
    const stop = first + ((to - i) >>> 4) * 4
    let w = first
    for (; w < stop; w += 4) {
      const a = words[w]! ^ c
      const b = words[w + 1]!
      const d = words[w + 2]!
      const e = words[w + 3]!
      c =
        t[3840 + (a & 0xff)]! ^
        t[3584 + ((a >>> 8) & 0xff)]! ^
        t[3328 + ((a >>> 16) & 0xff)]! ^
        t[3072 + (a >>> 24)]! ^
        t[2816 + (b & 0xff)]! ^
        t[2560 + ((b >>> 8) & 0xff)]! ^
        t[2304 + ((b >>> 16) & 0xff)]! ^
        t[2048 + (b >>> 24)]! ^
        t[1792 + (d & 0xff)]! ^
        t[1536 + ((d >>> 8) & 0xff)]! ^
        t[1280 + ((d >>> 16) & 0xff)]! ^
        t[1024 + (d >>> 24)]! ^
        t[768 + (e & 0xff)]! ^
        t[512 + ((e >>> 8) & 0xff)]! ^
        t[256 + ((e >>> 16) & 0xff)]! ^
        t[e >>> 24]!
    }
    i += (w - first) * 4
  }
  while (i < to) c = t[(c ^ bytes[i++]!) & 0xff]! ^ (c >>> 8)
  return c
}

/** The CRC as PostgreSQL stores it (an unsigned 32-bit value) from a running one. */
export function crc32cFinish(crc: number): number {
  return ~crc >>> 0
}

/** A running CRC before any byte: all ones (~0), as a signed 32-bit integer. */
export const CRC32C_START = -1

/** A finished CRC-32C of `bytes`, chained from a finished `initial`: @node-rs/crc32's crc32c. */
type NativeCrc32c = (bytes: Uint8Array, initial?: number) => number

/**
 * Record bodies from this long are checked by native code (the CPU's crc32 instruction) where the
 * platform has it: a call's crossing costs as much as the table's work on a short body. Measured on
 * 8 MB of records, body then header as the reader checks them, table against native (MB/s): Node 20
 * 1,082/1,171 at 256 bytes, 1,334/1,953 at 512, 1,502/2,921 at 1 kB, 1,712/5,330 at 8 kB; Node 22
 * 1,415/1,370, 1,910/2,097, 2,057/3,183, 2,213/5,461.
 */
const NATIVE_FROM = 512

/** @node-rs/crc32, an optional dependency, once the first long record asks for it; null where it is not installed. */
let native: NativeCrc32c | null | undefined

function nativeCrc32c(): NativeCrc32c | null {
  if (native === undefined) {
    try {
      native = (createRequire(import.meta.url)('@node-rs/crc32') as { crc32c: NativeCrc32c }).crc32c
    } catch {
      native = null
    }
  }
  return native
}

/**
 * A WAL record's CRC as PostgreSQL computes it (xlogrecord.h): its body, from `bodyFrom` to `end`,
 * then the first 20 bytes of its header, at `headerAt`. A long body goes to native code where it is
 * there, the table otherwise; the header is chained onto it in the table.
 */
export function recordCrc32c(bytes: Uint8Array, headerAt: number, bodyFrom: number, end: number): number {
  const fast = end - bodyFrom >= NATIVE_FROM ? nativeCrc32c() : null
  const body = fast ? ~fast(bytes.subarray(bodyFrom, end)) : crc32cUpdate(CRC32C_START, bytes, bodyFrom, end)
  return crc32cFinish(crc32cUpdate(body, bytes, headerAt, headerAt + 20))
}
