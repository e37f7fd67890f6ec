import { MemoryFS, PGlite } from '@electric-sql/pglite'
import { openCopy, readDataDir } from '../src/driver/pglite-template.js'
import { measureInsertCost } from '../src/index.js'
import { median, quick, ratio, results, rows, seconds } from './common.js'

/**
 * What a measurement on the embedded default costs an app test, against the insert itself: the
 * README's orders table, a repository function inserting 1,000 rows one statement each through the
 * handle \`run\` receives. Cold is the process's first call (it initialises the embedded database
 * walcost copies for every later one), warm the median of ten more, plain the same function on an
 * open PGlite whose schema is ready, in a transaction rolled back as the measurement's is.
 */
export async function appTest() {
  const setup = `create table orders (id int8 generated always as identity primary key, customer_id int4 not null,
      placed_at timestamptz not null default now(), total numeric(12,2) not null, note text);
    create index orders_customer_idx on orders (customer_id, placed_at)`
  const orders = Array.from({ length: 1_000 }, (_, i) => ({ customer: i % 300, total: (i % 500) + 0.5 }))
  type Queryable = { query(sql: string, params: unknown[]): Promise<unknown> }
  const insertOrders = async (client: Queryable) => {
    for (const order of orders) {
      await client.query('insert into orders (customer_id, total) values ($1, $2)', [order.customer, order.total])
    }
  }
  const measure = () => measureInsertCost({ setup, table: 'orders', run: (db) => insertOrders(db as Queryable) })
  const ms = (value: number) => `${Math.round(value * 1000).toLocaleString('en-US')} ms`
  const [, cold] = await seconds(measure)
  const warm: number[] = []
  for (let i = 0; i < 10; i++) warm.push((await seconds(measure))[1])
  // A COPY batch of 10,000 such rows: walcost's measurement of it, and PGlite's own COPY of them.
  const copyRows = Array.from({ length: 10_000 }, (_, i) => ({ customer_id: i % 300, total: (i % 500) + 0.5 }))
  const measureCopy = () => measureInsertCost({ setup, table: 'orders', rows: copyRows, method: 'copy' })
  const warmCopy: number[] = []
  for (let i = 0; i < 10; i++) warmCopy.push((await seconds(measureCopy))[1])
  const csv = new Blob([copyRows.map((row) => `${row.customer_id},${row.total}\n`).join('')])
  const open = await PGlite.create()
  const plain: number[] = []
  const plainCopy: number[] = []
  const rolledBack = async (work: () => Promise<unknown>) =>
    (
      await seconds(async () => {
        await open.exec('begin')
        await work()
        await open.exec('rollback')
      })
    )[1]
  try {
    await open.exec(setup)
    for (let i = 0; i < 10; i++) {
      plain.push(await rolledBack(() => insertOrders(open)))
      plainCopy.push(
        await rolledBack(() =>
          open.query(`copy orders (customer_id, total) from '/dev/blob' with (format csv)`, [], { blob: csv }),
        ),
      )
    }
  } finally {
    await open.close()
  }
  // A copy's opening, by PGlite's loadDataDir (walcost's way until 0.5.17's internals were used)
  // and by writing the files into the new instance: the same template, alternately, five each.
  const template = await PGlite.create({ postgresqlconf: ["shared_buffers = '16MB'"] })
  await template.exec(setup)
  const files = await readDataDir(template)
  const dumped = await template.dumpDataDir('none')
  await template.close()
  const opens = { loadDataDir: [] as number[], written: [] as number[] }
  for (let i = 0; i < 5; i++) {
    const [loaded, byLoad] = await seconds(() => PGlite.create({ loadDataDir: dumped }))
    await loaded.close()
    const [written, byWriting] = await seconds(() => openCopy({ PGlite, MemoryFS }, files))
    await written.close()
    opens.loadDataDir.push(byLoad)
    opens.written.push(byWriting)
  }
  rows.push({
    section: 'app test',
    measure:
      'opening a copy of the database, by loadDataDir / by writing its files into the new instance, medians of 5',
    value: `${ms(median(opens.loadDataDir))} / ${ms(median(opens.written))}`,
    target: '-',
  })
  results.appTest = { cold, warm, plain, warmCopy, plainCopy, opens }
  rows.push({
    section: 'app test',
    measure: 'cold first call (1,000 orders by a repository function)',
    value: ms(cold),
    target: '-',
  })
  rows.push({ section: 'app test', measure: 'warm call, median of 10', value: ms(median(warm)), target: '-' })
  rows.push({
    section: 'app test',
    measure: 'plain insert on an open PGlite, median of 10',
    value: ms(median(plain)),
    target: '-',
  })
  rows.push({
    section: 'app test',
    measure: 'warm / plain',
    value: ratio(median(warm) / median(plain)),
    target: quick ? '-' : '<= 1.5x',
  })
  rows.push({
    section: 'app test',
    measure: `10,000 rows as one COPY: warm measurement / PGlite's own COPY, medians of 10 (${ms(median(warmCopy))} / ${ms(median(plainCopy))})`,
    value: ratio(median(warmCopy) / median(plainCopy)),
    target: quick ? '-' : '<= 2.0x',
  })
}
