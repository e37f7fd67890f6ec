import { spawn } from 'node:child_process'
import type pg from 'pg'
import { measureInsertCost } from '../src/index.js'
import { freshTable, quick, ratio, results, rows, seconds } from './common.js'

/** Rows a second measured by INSERT, multi-row INSERT and COPY, against the same rows inserted plainly. */
export async function methods(url: string, client: pg.Client) {
  const count = quick ? 5_000 : 50_000
  const data = Array.from({ length: count }, (_, i) => ({
    time: new Date(Date.UTC(2027, 0, 1) + i * 10),
    device_id: i % 1000,
    metric_id: i % 50,
    value: i / 3,
    extra: i,
  }))
  const entries: Record<string, number> = {}
  for (const method of ['insert', 'multirow', 'copy'] as const) {
    await freshTable(client, 10_000)
    const [, elapsed] = await seconds(() => measureInsertCost({ db: url, table: 'bench', rows: data, method }))
    entries[`walcost ${method}`] = count / elapsed
  }
  await freshTable(client, 10_000)
  const [, plainInsert] = await seconds(async () => {
    await client.query('begin')
    for (const row of data)
      await client.query('insert into bench values ($1, $2, $3, $4, $5)', [
        row.time,
        row.device_id,
        row.metric_id,
        row.value,
        row.extra,
      ])
    await client.query('rollback')
  })
  entries['plain pg insert'] = count / plainInsert
  try {
    await freshTable(client, 10_000)
    const csv = data
      .map((row) => `${row.time.toISOString()},${row.device_id},${row.metric_id},${row.value},${row.extra}`)
      .join('\n')
    const [, psql] = await seconds(
      () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn('psql', [url, '-q', '-c', '\\copy bench from stdin with (format csv)'], {
            stdio: ['pipe', 'ignore', 'inherit'],
          })
          child.on('error', reject)
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql exited ${code}`))))
          child.stdin.end(csv)
        }),
    )
    entries['psql \\copy'] = count / psql
  } catch {
    entries['psql \\copy'] = Number.NaN
  }
  results.methods = { rows: count, rowsPerSecond: entries }
  for (const [name, rate] of Object.entries(entries)) {
    rows.push({
      section: 'methods',
      measure: `${name}, rows/s relative to walcost COPY`,
      value: Number.isNaN(rate) ? 'psql not found' : ratio(rate / entries['walcost copy']!),
      target: '-',
    })
  }
}
