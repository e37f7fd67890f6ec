import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { CRC32C_START, crc32cFinish, crc32cUpdate, recordCrc32c } from '../../src/decode/crc32c.js'

describe('crc32c', () => {
  it('gives the Castagnoli check value of "123456789", in one piece or in two', () => {
    const bytes = new TextEncoder().encode('123456789')
    expect(crc32cFinish(crc32cUpdate(CRC32C_START, bytes))).toBe(0xe3069283)
    expect(crc32cFinish(crc32cUpdate(crc32cUpdate(CRC32C_START, bytes, 0, 4), bytes, 4))).toBe(0xe3069283)
  })

  it("checks a record's body then its header alike, short bodies by the table and long ones by native code", () => {
    // @node-rs/crc32 is an optional dependency: where npm installed it, long bodies go to it.
    const installed = (() => {
      try {
        createRequire(import.meta.url)('@node-rs/crc32')
        return true
      } catch {
        return false
      }
    })()
    expect(installed).toBe(process.platform === 'linux' && process.arch === 'x64' ? true : installed)
    const bytes = new Uint8Array(20_000)
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2654435761) >>> 24
    // Records at unaligned offsets, with bodies on either side of the native threshold (512 bytes).
    for (const [at, length] of [
      [3, 60],
      [101, 535],
      [1_003, 536],
      [2_005, 8_216],
    ] as const) {
      const body = crc32cUpdate(CRC32C_START, bytes, at + 24, at + length)
      const table = crc32cFinish(crc32cUpdate(body, bytes, at, at + 20))
      expect(recordCrc32c(bytes, at, at + 24, at + length), `${length} bytes at ${at}`).toBe(table)
    }
  })
})
