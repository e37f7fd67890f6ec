import { describe, expect, it } from 'vitest'
import { recordTypeName } from '../../src/decode/record-types.js'

// Resource manager ids and info bits from src/include/access/rmgrlist.h and heapam_xlog.h / nbtxlog.h.
describe('recordTypeName', () => {
  it('names records as pg_walinspect and pg_waldump do', () => {
    expect(recordTypeName(10, 0x00, 16)).toBe('Heap/INSERT')
    expect(recordTypeName(10, 0x80, 16)).toBe('Heap/INSERT+INIT')
    expect(recordTypeName(9, 0x50, 16)).toBe('Heap2/MULTI_INSERT')
    expect(recordTypeName(11, 0x00, 16)).toBe('Btree/INSERT_LEAF')
    expect(recordTypeName(1, 0x00, 16)).toBe('Transaction/COMMIT')
  })
})
