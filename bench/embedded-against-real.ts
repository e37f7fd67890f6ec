import type pg from 'pg'
import { type InsertCost, measureInsertCost } from '../src/index.js'
import { freshTable, quick, ratio, results, rows, rowsSql, seconds, TABLE } from './common.js'

/** One batch measured on the embedded PGlite and on the real server: the same records and bytes, and the time each took. */
export async function embeddedAgainstReal(url: string, client: pg.Client) {
  const count = quick ? 10_000 : 100_000
  const setup = `${TABLE}; ${rowsSql(0, 100_000)}`
  await freshTable(client, 100_000)
  const [real, realSeconds] = await seconds(() =>
    measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, count) }),
  )
  const [embedded, embeddedSeconds] = await seconds(() =>
    measureInsertCost({ setup: `${setup}; analyze bench`, table: 'bench', sql: rowsSql(100_000, count) }),
  )
  const same = (pick: (cost: InsertCost) => unknown) => JSON.stringify(pick(real)) === JSON.stringify(pick(embedded))
  results.embeddedAgainstReal = {
    rows: count,
    real: {
      records: real.walRecords,
      heapBytes: real.breakdown?.heapBytes,
      indexBytes: real.breakdown?.indexBytes,
      seconds: realSeconds,
    },
    embedded: {
      records: embedded.walRecords,
      heapBytes: embedded.breakdown?.heapBytes,
      indexBytes: embedded.breakdown?.indexBytes,
      seconds: embeddedSeconds,
    },
  }
  rows.push({
    section: 'embedded vs real',
    measure: 'same WAL records',
    value: same((cost) => cost.walRecords) ? 'yes' : `no: ${real.walRecords} vs ${embedded.walRecords}`,
    target: 'yes',
  })
  rows.push({
    section: 'embedded vs real',
    measure: 'same heap and index record bytes',
    value: same((cost) => [cost.breakdown?.heapBytes, cost.breakdown?.indexBytes]) ? 'yes' : 'no',
    target: 'yes',
  })
  rows.push({
    section: 'embedded vs real',
    measure: 'PGlite time / PostgreSQL 18 time (prefill included on PGlite)',
    value: ratio(embeddedSeconds / realSeconds),
    target: '-',
  })
}
