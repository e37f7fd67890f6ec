import { CRC32C_START, crc32cFinish, crc32cUpdate, recordCrc32c } from '../src/decode/crc32c.js'

/** A bench row: what was measured, its value and its target. */
export interface CrcRow {
  measure: string
  value: string
  target: string
}

/** Records laid 8-byte aligned over a buffer of random bytes, of `lengths()` bytes each. */
function records(bufferBytes: number, lengths: () => number): { bytes: Uint8Array; at: Array<[number, number]> } {
  const bytes = new Uint8Array(bufferBytes)
  let seed = 12_345
  const next = () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0
    return seed
  }
  for (let i = 0; i < bytes.length; i++) bytes[i] = next() >>> 24
  const at: Array<[number, number]> = []
  for (let offset = 0; ; ) {
    const length = lengths()
    if (offset + length > bytes.length) break
    at.push([offset, length])
    offset = (offset + length + 7) & ~7
  }
  return { bytes, at }
}

/** MB/s checking every record as the reader does (its body, then its header), the best of `rounds` after two to warm up. */
function checked(
  { bytes, at }: ReturnType<typeof records>,
  check: (bytes: Uint8Array, at: number, end: number) => number,
  rounds = 8,
) {
  const total = at.reduce((sum, [, length]) => sum + length, 0)
  let best = Number.POSITIVE_INFINITY
  let sink = 0
  for (let round = 0; round < rounds; round++) {
    const start = performance.now()
    for (const [offset, length] of at) sink ^= check(bytes, offset, offset + length)
    if (round >= 2) best = Math.min(best, performance.now() - start)
  }
  return { mbps: total / best / 1000, sink }
}

const table = (bytes: Uint8Array, at: number, end: number) =>
  crc32cFinish(crc32cUpdate(crc32cUpdate(CRC32C_START, bytes, at + 24, end), bytes, at, at + 20))
const chosen = (bytes: Uint8Array, at: number, end: number) => recordCrc32c(bytes, at, at + 24, end)

/**
 * The CRC-32C of WAL records, side by side in one process: the table alone, and as the reader
 * checks them (native code for bodies of 512 bytes or more, where @node-rs/crc32 is installed), on
 * records of 50-300 bytes (most of a WAL of small writes) and of 8 kB (full-page images).
 */
export function crcRows(): CrcRow[] {
  let seed = 7
  const small = records(16 * 1024 * 1024, () => {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0
    return 50 + (seed % 251)
  })
  const images = records(16 * 1024 * 1024, () => 8_216)
  const rows: CrcRow[] = []
  for (const [kind, set] of [
    ['records of 50-300 bytes', small],
    ['records of 8 kB', images],
  ] as const) {
    const alone = checked(set, table)
    const read = checked(set, chosen)
    if (alone.sink !== read.sink) throw new Error(`crc bench: the table and the reader's check disagree on ${kind}`)
    rows.push({
      measure: `CRC-32C of ${kind} as the reader checks them on Node ${process.versions.node}, MB/s: the table alone / the reader's choice`,
      value: `${alone.mbps.toFixed(0)} / ${read.mbps.toFixed(0)}`,
      target:
        kind === 'records of 8 kB' ? 'the choice >= 2x the table' : '>= 400 (Node 20 fell to 98-175 when deoptimised)',
    })
  }
  return rows
}
