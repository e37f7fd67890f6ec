// COPY ... TO STDOUT (FORMAT binary), decoded as it streams: a signature, flags and a header
// extension, then per row a field count (int16) and per field a length (int32, -1 for NULL) and
// its bytes, and -1 as the count that ends it. Field bytes pass through as slices, unconcatenated.
import { WalcostError } from '../core/errors.js'

const SIGNATURE = Uint8Array.from([0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00])

/** The bytes of every field of a one-column binary COPY, in order, as slices of the incoming chunks. */
export async function* binaryCopyFields(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  // Integers and the header may straddle chunks: they are gathered here.
  let pending: Uint8Array = new Uint8Array(0)
  let state: 'signature' | 'extension' | 'count' | 'length' | 'field' | 'end' = 'signature'
  let want = SIGNATURE.length + 8
  let fieldLeft = 0
  for await (const chunk of chunks) {
    let offset = 0
    while (offset < chunk.length) {
      if (state === 'end') throw malformed('bytes after the end of the COPY')
      if (state === 'field') {
        const take = Math.min(fieldLeft, chunk.length - offset)
        yield chunk.subarray(offset, offset + take)
        offset += take
        fieldLeft -= take
        if (fieldLeft === 0) {
          state = 'count'
          want = 2
        }
        continue
      }
      const take = Math.min(want - pending.length, chunk.length - offset)
      pending = concat(pending, chunk.subarray(offset, offset + take))
      offset += take
      if (pending.length < want) continue
      const view = new DataView(pending.buffer, pending.byteOffset, pending.byteLength)
      if (state === 'signature') {
        if (!SIGNATURE.every((byte, i) => pending[i] === byte)) throw malformed('no binary COPY signature')
        state = 'extension'
        want = view.getUint32(SIGNATURE.length + 4)
      } else if (state === 'extension') {
        state = 'count'
        want = 2
      } else if (state === 'count') {
        const count = view.getInt16(0)
        if (count === -1) state = 'end'
        else if (count !== 1) throw malformed(`a row of ${count} fields`)
        else {
          state = 'length'
          want = 4
        }
      } else {
        fieldLeft = view.getInt32(0)
        if (fieldLeft < 0) throw malformed('a NULL where WAL bytes were expected')
        state = fieldLeft === 0 ? 'count' : 'field'
        want = 2
      }
      pending = new Uint8Array(0)
      if (state === 'extension' && want === 0) {
        state = 'count'
        want = 2
      }
    }
  }
  if (state !== 'end') throw malformed('the COPY ended early')
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const joined = new Uint8Array(a.length + b.length)
  joined.set(a, 0)
  joined.set(b, a.length)
  return joined
}

function malformed(detail: string): WalcostError {
  return new WalcostError(
    'WAL_UNREADABLE',
    `reading WAL through COPY failed: ${detail}. Measure again; report this if it repeats.`,
  )
}
