import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { measureInsertCost } from '../../src/index.js'
import { backends, type TestDatabase } from '../support/backends.js'

// A measurement's time, apart from how its rows were sent: what a statement costs and what a row
// costs, from the probe measureInsertCost runs after a batch of rows or count (timing.parts).

const SETUP = `create table feed (id int8 primary key, at timestamptz not null, kind int4 not null, note text);
  create index feed_kind_idx on feed (kind, at)`

describe.each(backends)('timing parts on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  it.each([
    ['insert', 2_000],
    ['multirow', 20],
    ['copy', 1],
  ] as const)(
    'a batch by %s counts its statements (%i) and splits its time into a statement and a row',
    async (method, statements) => {
      const cost = await measureInsertCost({ db: test.db, table: 'feed', count: 2_000, method, batchSize: 100 })
      expect(cost.timing.statements).toBe(statements)
      const parts = cost.timing.parts
      expect(parts).not.toBeNull()
      if (!parts) return
      // Four shapes: 100 rows one INSERT a row, 1,000 rows 50 an INSERT, COPYs of 100 and 1,000 rows.
      expect(parts.probe.map(({ method, rows, rowsPerStatement }) => [method, rows, rowsPerStatement])).toEqual([
        ['insert', 100, 1],
        ['multirow', 1_000, 50],
        ['copy', 100, 100],
        ['copy', 1_000, 1_000],
      ])
      // 100 statements of a row each take longer than 20 of 50 rows each, for a tenth of the rows.
      const [single, multi] = parts.probe
      expect(single?.ms).toBeGreaterThan((multi?.ms ?? 0) / 10)
      expect(parts.msPerStatement).toBeGreaterThan(0)
      expect(parts.insertMsPerRow).toBeGreaterThan(0)
      expect(parts.copyMsPerRow).toBeGreaterThan(0)
      // The batch's statements and rows, each at its part's time, add up to the batch's own time,
      // the measured part being what the other leaves of it: its rows, except one INSERT a row.
      expect(parts.measured).toBe(method === 'insert' ? 'statements' : 'rows')
      const statementMs = method === 'copy' ? parts.copyMsPerStatement : parts.msPerStatement
      const rowMs = method === 'copy' ? parts.copyMsPerRow : parts.insertMsPerRow
      if (parts.scale !== 1) expect(statements * statementMs + cost.rows * rowMs).toBeCloseTo(cost.timing.batchMs, 6)
      expect(parts.scale).toBeGreaterThan(0)
      // The probe is rolled back: the table is as it was.
      expect(await test.query('select count(*)::int as n from feed')).toEqual([{ n: 0 }])
    },
  )

  it('has no parts for SQL text, whose statements walcost does not count, nor when the probe is turned off', async () => {
    const bySql = await measureInsertCost({
      db: test.db,
      table: 'feed',
      sql: `insert into feed select i, now(), i % 7, 'x' from generate_series(1, 500) i`,
    })
    expect(bySql.timing.statements).toBeNull()
    expect(bySql.timing.parts).toBeNull()
    const unprobed = await measureInsertCost({ db: test.db, table: 'feed', count: 500, timingProbe: false })
    expect(unprobed.timing.statements).toBe(500)
    expect(unprobed.timing.parts).toBeNull()
  })
})
