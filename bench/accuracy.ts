import type pg from 'pg'
import { type InsertCost, measureInsertCost } from '../src/index.js'
import { freshTable, quick, results, rows, rowsSql } from './common.js'

/** The same batch measured on identical fresh tables, each right after a checkpoint: how far its records, bytes and noise move from run to run. */
export async function accuracy(url: string, client: pg.Client) {
  const repetitions = quick ? 3 : 5
  const costs: InsertCost[] = []
  for (let i = 0; i < repetitions; i++) {
    await freshTable(client, 100_000)
    // Every run starts right after a checkpoint of its own, so that none lands in one of them only
    // (the WAL of the sections before can force one): its images would change that run's bytes.
    await client.query('checkpoint')
    costs.push(await measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, quick ? 10_000 : 100_000) }))
  }
  const spread = (values: number[]) => Math.max(...values) - Math.min(...values)
  const records = costs.map((cost) => cost.walRecords ?? 0)
  const recordBytes = costs.map((cost) => cost.breakdown!.heapBytes + cost.breakdown!.indexBytes)
  const otherShare = costs.map((cost) => cost.breakdown!.otherBytes / cost.walBytes)
  // Attributed runs (breakdown! above): their noise is known.
  const noiseShare = costs.map((cost) => (cost.noiseBytes as number) / cost.windowBytes)
  results.accuracy = {
    repetitions,
    records,
    recordBytes,
    bytesPerRow: costs.map((cost) => cost.bytesPerRow),
    fpiCount: costs.map((cost) => cost.fpiCount),
    otherShare,
    noiseShare,
  }
  rows.push({
    section: 'accuracy',
    measure: `spread of WAL records over ${repetitions} runs`,
    value: String(spread(records)),
    target: '0',
  })
  rows.push({
    section: 'accuracy',
    measure: `spread of heap+index record bytes over ${repetitions} runs`,
    value: String(spread(recordBytes)),
    target: '0',
  })
  rows.push({
    section: 'accuracy',
    measure: 'otherBytes / walBytes (alignment, page headers)',
    value: `${(100 * Math.max(...otherShare)).toFixed(2)}%`,
    target: 'small',
  })
  rows.push({
    section: 'accuracy',
    measure: 'noiseBytes / windowBytes on an idle server',
    value: `${(100 * Math.max(...noiseShare)).toFixed(3)}%`,
    target: '~0',
  })
}
