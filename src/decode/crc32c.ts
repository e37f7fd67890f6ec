// biome-ignore-all lint/style/noNonNullAssertion: indices are bounded by the loop and the table has 256 entries; checks in the per-record loop would cost time for nothing.
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as PostgreSQL's COMP_CRC32C computes it.

const TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** Folds `bytes[from, to)` into a running CRC; start with 0xFFFFFFFF and finish with crc32cFinish. */
export function crc32cUpdate(crc: number, bytes: Uint8Array, from = 0, to = bytes.length): number {
  let c = crc
  for (let i = from; i < to; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8)
  return c >>> 0
}

export function crc32cFinish(crc: number): number {
  return (crc ^ 0xffffffff) >>> 0
}

export const CRC32C_START = 0xffffffff
