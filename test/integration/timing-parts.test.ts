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
      // The batch's own time gives its method's row; the probe's ratio the other's.
      expect(parts.measured).toBe(method === 'copy' ? 'copyMsPerRow' : 'insertMsPerRow')
      expect(parts.probe.rows).toBe(200)
      expect(parts.probe.rowsPerStatement).toBe(50)
      // 200 statements of a row each take longer than 4 of 50 rows: the difference is the statements'.
      expect(parts.probe.insertMs).toBeGreaterThan(parts.probe.multirowMs)
      expect(parts.msPerStatement).toBeGreaterThan(0)
      expect(parts.insertMsPerRow).toBeGreaterThan(0)
      expect(parts.copyMsPerRow).toBeGreaterThan(0)
      const ownRow = (cost.timing.batchMs - statements * parts.msPerStatement) / cost.rows
      if (ownRow > 0) expect(parts[parts.measured]).toBeCloseTo(ownRow, 9)
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
