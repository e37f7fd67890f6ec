// Child of bench/run.ts: streams COUNT generated rows through COPY on BACKEND (pg at URL, or the
// embedded PGlite) and prints this process's peak RSS in bytes.
import { measureInsertCost } from '../src/index.js'

const [backend, countText, url] = process.argv.slice(2)
const count = Number(countText)

function* rows() {
  for (let i = 0; i < count; i++) {
    yield {
      time: new Date(Date.UTC(2027, 0, 1) + i * 10),
      device_id: i % 1000,
      metric_id: i % 50,
      value: i / 3,
      extra: i,
    }
  }
}

const table = `create table bench (time timestamptz not null, device_id int4 not null, metric_id int4 not null, value float8 not null, extra int8 not null);
  create index bench_time_idx on bench (time)`
await measureInsertCost(
  backend === 'pg'
    ? { db: url, table: 'bench', rows: rows(), method: 'copy' }
    : { setup: table, table: 'bench', rows: rows(), method: 'copy' },
)
console.log(process.resourceUsage().maxRSS * 1024)
