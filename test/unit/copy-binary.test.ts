import { describe, expect, it } from 'vitest'
import { binaryCopyFields } from '../../src/decode/copy-binary.js'

/** A one-column binary COPY of `fields`, as PostgreSQL sends it. */
function binaryCopy(fields: Uint8Array[]): Uint8Array {
  const parts: number[] = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0]
  for (const field of fields) {
    parts.push(
      0,
      1,
      (field.length >>> 24) & 0xff,
      (field.length >>> 16) & 0xff,
      (field.length >>> 8) & 0xff,
      field.length & 0xff,
    )
    parts.push(...field)
  }
  parts.push(0xff, 0xff)
  return Uint8Array.from(parts)
}

async function* chunksOf(bytes: Uint8Array, size: number) {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size)
}

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<number[]> {
  const out: number[] = []
  for await (const slice of binaryCopyFields(chunks)) out.push(...slice)
  return out
}

describe('binaryCopyFields', () => {
  const fields = [Uint8Array.from([1, 2, 3]), new Uint8Array(0), Uint8Array.from({ length: 300 }, (_, i) => i % 251)]
  const expected = fields.flatMap((field) => [...field])

  it.each([1, 3, 7, 64, 10_000])('yields every field byte in order, whatever the chunk size (%i)', async (size) => {
    expect(await collect(chunksOf(binaryCopy(fields), size))).toEqual(expected)
  })

  it('fails loudly on a stream that is not a binary COPY', async () => {
    const bytes = binaryCopy(fields)
    bytes[0] = 0
    await expect(collect(chunksOf(bytes, 16))).rejects.toMatchObject({ code: 'WAL_UNREADABLE' })
  })
})
