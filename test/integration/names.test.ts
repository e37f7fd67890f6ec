import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { measureInsertCost } from '../../src/index.js'
import { backends, type TestDatabase } from '../support/backends.js'

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

const pieces = [
  'Mixed Case',
  'select',
  'a.b',
  'quote"inside',
  "it's",
  'back\\slash',
  'ünïcödé',
  '表',
  '🐘',
  'x"; drop table canary; --',
  "'); drop table canary; --",
  '$1',
  'user',
  'tab\tname',
]

/** Names built from pieces PostgreSQL treats specially: every one of them must round-trip quoted. */
const cases = pieces.map((piece, i) => ({
  schema: `${piece} schema`,
  table: `${pieces[(i + 3) % pieces.length]} ${i}`,
  column: pieces[(i + 5) % pieces.length]!,
  index: `${pieces[(i + 7) % pieces.length]} idx ${i}`,
}))

describe.each(backends)('hostile names on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec('create table canary (id int); insert into canary values (1)')
  })
  afterAll(() => test.close())

  it.each(cases)('measures $schema . $table ($column, $index)', async (names) => {
    const table = `${quote(names.schema)}.${quote(names.table)}`
    await test.exec(`create schema ${quote(names.schema)};
      create table ${table} (${quote(names.column)} int8 primary key, "when" timestamptz not null);
      create index ${quote(names.index)} on ${table} ("when")`)
    for (const method of ['insert', 'copy'] as const) {
      const fromRows = await measureInsertCost({
        db: test.db,
        table,
        rows: [
          { [names.column]: 1, when: '2026-01-01' },
          { [names.column]: 2, when: '2026-01-02' },
        ],
        method,
      })
      expect(fromRows.rows).toBe(2)
      expect(fromRows.indexes.map((index) => index.name).sort()).toEqual([names.index, `${names.table}_pkey`].sort())
    }
    const generated = await measureInsertCost({
      db: test.db,
      table,
      count: 50,
      method: 'multirow',
      dropIndexes: [names.index],
    })
    expect(generated.rows).toBe(50)
    expect(generated.scenario.table).toBe(table)
    expect(await test.query('select count(*)::int as n from canary')).toEqual([{ n: 1 }])
    expect(await test.query(`select count(*)::int as n from ${table}`)).toEqual([{ n: 0 }])
  })
})
