import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { type InsertCost, measureInsertCost } from '../src/index.js'
import { freshTable, median, quick, ratio, results, rows, rowsSql, seconds, TABLE } from './common.js'

/**
 * measureInsertCost against the same batch run plainly (in a transaction rolled back the same way),
 * on identical fresh tables: the median of the ratios of each pair, since one run on a shared
 * machine varies by more than the difference measured, and a pair's two runs share its state. Every
 * other pair runs the measurement first, so that neither side always follows the other.
 */
async function overheadOf(
  label: string,
  target: string,
  repetitions: number,
  fresh: () => Promise<void>,
  plain: () => Promise<unknown>,
  measured: () => Promise<InsertCost>,
) {
  const plainSeconds: number[] = []
  const measuredSeconds: number[] = []
  let records: number | null = null
  const runPlain = async () => {
    await fresh()
    plainSeconds.push((await seconds(plain))[1])
  }
  const runMeasured = async () => {
    await fresh()
    const [cost, time] = await seconds(measured)
    measuredSeconds.push(time)
    records = cost.walRecords
  }
  for (let i = 0; i < repetitions; i++) {
    if (i % 2 === 0) {
      await runPlain()
      await runMeasured()
    } else {
      await runMeasured()
      await runPlain()
    }
  }
  const value = median(measuredSeconds.map((seconds, i) => seconds / (plainSeconds[i] ?? Number.NaN)))
  rows.push({ section: 'overhead', measure: label, value: ratio(value), target })
  return { plainSeconds, measuredSeconds, ratio: value, records }
}

/** The batch of `size` rows run plainly, in a transaction rolled back as the measurement's is. */
export const plainInsert = (run: (sql: string) => Promise<unknown>, size: number) => async () => {
  await run('begin')
  await run(rowsSql(100_000, size))
  await run('rollback')
}

/**
 * Each comparison gives both sides the same kind of connection: a warm Pool (an application's),
 * or a connection string, where the plain insert connects and disconnects too, as the measurement
 * does (it opens two sessions, one to read the WAL while the batch runs).
 */
export async function overhead(url: string, client: pg.Client) {
  const sizes = quick
    ? [10_000]
    : process.env.BENCH_SIZES
      ? process.env.BENCH_SIZES.split(',').map(Number)
      : [100_000, 1_000_000]
  const target = (value: string) => (quick ? '-' : value)
  // Pairs vary by 20% on a shared 2-core machine: 15 left the median 4% apart from run to run.
  const repetitions = (size: number) => (quick ? 1 : size >= 1_000_000 ? 3 : 31)
  const fresh = () => freshTable(client, 100_000)
  const entries = []
  const pool = new pg.Pool({ connectionString: url, max: 4 })
  try {
    for (const size of sizes) {
      const entry = await overheadOf(
        `measureInsertCost / plain insert, ${size.toLocaleString('en-US')} rows, PostgreSQL 18, a Pool`,
        target('<= 1.10'),
        repetitions(size),
        fresh,
        async () => {
          const pooled = await pool.connect()
          try {
            await plainInsert((sql) => pooled.query(sql), size)()
          } finally {
            pooled.release()
          }
        },
        () => measureInsertCost({ db: pool, table: 'bench', sql: rowsSql(100_000, size) }),
      )
      entries.push({ backend: 'postgres', connection: 'pool', rows: size, ...entry })
    }
  } finally {
    await pool.end()
  }
  const size = sizes[0] ?? 10_000
  const entry = await overheadOf(
    `the same, ${size.toLocaleString('en-US')} rows, a connection string`,
    target('<= 1.10'),
    repetitions(size),
    fresh,
    async () => {
      const connected = new pg.Client({ connectionString: url })
      await connected.connect()
      try {
        await plainInsert((sql) => connected.query(sql), size)()
      } finally {
        await connected.end()
      }
    },
    () => measureInsertCost({ db: url, table: 'bench', sql: rowsSql(100_000, size) }),
  )
  entries.push({ backend: 'postgres', connection: 'url', rows: size, ...entry })
  const embeddedSize = quick ? 10_000 : 100_000
  const embedded = await PGlite.create()
  try {
    const entry = await overheadOf(
      `the same on PGlite, ${embeddedSize.toLocaleString('en-US')} rows`,
      target('<= 1.15'),
      repetitions(embeddedSize),
      async () => {
        await embedded.exec(`drop table if exists bench; ${TABLE}; ${rowsSql(0, 100_000)}`)
        await embedded.exec('vacuum analyze bench')
      },
      plainInsert((sql) => embedded.exec(sql), embeddedSize),
      () => measureInsertCost({ db: embedded, table: 'bench', sql: rowsSql(100_000, embeddedSize) }),
    )
    entries.push({ backend: 'pglite', rows: embeddedSize, ...entry })
  } finally {
    await embedded.close()
  }
  results.overhead = entries
}
