// What every section of the benchmarks shares: the command line's options, the rows and results
// they report into, and the bench table most of them measure.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type pg from 'pg'

export const run = promisify(execFile)
export const quick = process.argv.includes('--quick')
/** `--only=overhead` (or appTest, exporter, accuracy, memory, methods, embeddedAgainstReal, observe, watch, topRate, ceiling, inspect, crc, startup): one section; BENCH_SIZES=100000,1000000 sets the overhead sizes. */
export const only = process.argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length)
export const here = new URL('.', import.meta.url).pathname

export const TABLE = `create table bench (time timestamptz not null, device_id int4 not null, metric_id int4 not null, value float8 not null, extra int8 not null);
  create index bench_time_idx on bench (time); create index bench_device_idx on bench (device_id, time); create index bench_metric_idx on bench (metric_id, time)`
export const rowsSql = (
  from: number,
  count: number,
) => `insert into bench select timestamptz '2026-01-01' + i * interval '10 ms', (i::int8 * 7919 % 1000)::int4, i % 50, i * 0.001, i
  from generate_series(${from + 1}, ${from + count}) i`

interface Row {
  section: string
  measure: string
  value: string
  target: string
}
export const rows: Row[] = []
export const results: Record<string, unknown> = { quick, node: process.version, startedAt: new Date().toISOString() }
export const ratio = (value: number) => `${value.toFixed(2)}x`

export async function seconds<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now()
  const value = await work()
  return [value, (performance.now() - start) / 1000]
}

/** A fresh table of `prefill` rows, vacuumed: every repetition starts from the same table. */
export async function freshTable(client: pg.Client, prefill: number) {
  await client.query('drop table if exists bench')
  await client.query(TABLE)
  await client.query(rowsSql(0, prefill))
  await client.query('vacuum analyze bench')
}

export const median = (values: number[]) =>
  [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? Number.NaN
