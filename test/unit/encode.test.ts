import { describe, expect, it } from 'vitest'
import { column as catalogColumn } from './catalog.js'

const column = (typeName: string) => catalogColumn('c', typeName, false)

import { copyLine, toPgText } from '../../src/measure/encode.js'

describe('toPgText', () => {
  it("writes JavaScript values as PostgreSQL's text input", () => {
    expect(toPgText(null, column('int4'))).toBeNull()
    expect(toPgText(42, column('int4'))).toBe('42')
    expect(toPgText(Number.NaN, column('float8'))).toBe('NaN')
    expect(toPgText(Number.NEGATIVE_INFINITY, column('float8'))).toBe('-Infinity')
    expect(toPgText(12n, column('int8'))).toBe('12')
    expect(toPgText(true, column('bool'))).toBe('t')
    expect(toPgText(new Date('2026-01-01T00:00:00Z'), column('timestamptz'))).toBe('2026-01-01T00:00:00.000Z')
    expect(toPgText(Uint8Array.from([0, 255]), column('bytea'))).toBe('\\x00ff')
    expect(toPgText({ a: [1, 'x'] }, column('jsonb'))).toBe('{"a":[1,"x"]}')
  })

  it('writes arrays as array literals, quoting and escaping each element', () => {
    expect(toPgText(['a', 'b"c', null, 'd\\e'], column('_text'))).toBe('{"a","b\\"c",NULL,"d\\\\e"}')
    expect(
      toPgText(
        [
          [1, 2],
          [3, 4],
        ],
        column('_int4'),
      ),
    ).toBe('{{"1","2"},{"3","4"}}')
  })
})

describe('copyLine', () => {
  it("writes one row of COPY's text format: tabs between fields, \\N for NULL, escapes", () => {
    expect(copyLine(['a', null, 'tab\there', 'line\nbreak', 'back\\slash'])).toBe(
      'a\t\\N\ttab\\there\tline\\nbreak\tback\\\\slash\n',
    )
  })
})
