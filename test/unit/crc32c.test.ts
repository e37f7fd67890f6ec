import { describe, expect, it } from 'vitest'
import { CRC32C_START, crc32cFinish, crc32cUpdate } from '../../src/decode/crc32c.js'

describe('crc32c', () => {
  it('gives the Castagnoli check value of "123456789", in one piece or in two', () => {
    const bytes = new TextEncoder().encode('123456789')
    expect(crc32cFinish(crc32cUpdate(CRC32C_START, bytes))).toBe(0xe3069283)
    expect(crc32cFinish(crc32cUpdate(crc32cUpdate(CRC32C_START, bytes, 0, 4), bytes, 4))).toBe(0xe3069283)
  })
})
