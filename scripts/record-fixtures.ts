// Records real results on the embedded PGlite as JSON, for the unit tier's renderer tests:
// `npx tsx scripts/record-fixtures.ts`. Rerun it when a result type changes.
import { writeFileSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import {
  auditIndexes,
  compareRemedies,
  compareScenarios,
  compareWriteScenarios,
  measureInsertCost,
  observeWal,
} from '../src/index.js'

const setup = `
  create table orders (id int8 generated always as identity primary key, customer int4 not null,
                       placed_at timestamptz not null default now(), status text not null, total numeric(12,2));
  create index orders_customer_idx on orders (customer);
  create index orders_status_placed_idx on orders (status, placed_at);
  insert into orders (customer, status, total) select i % 500, 'new', i from generate_series(1, 20000) i;
  analyze orders;`
const options = { setup, table: 'orders', count: 2_000 }
const out = new URL('../test/unit/fixtures/', import.meta.url)
const save = (name: string, value: unknown) =>
  writeFileSync(new URL(`${name}.json`, out), `${JSON.stringify(value, null, 2)}\n`)

save('insert-cost', await measureInsertCost({ ...options, checkpoint: true }))
save('scenarios', await compareScenarios(options))
save(
  'index-audit',
  await auditIndexes({ ...options, minStatsAgeDays: 0, sampleUpdate: 'update orders set status = $1 where id = $2' }),
)
save('remedies', await compareRemedies(options))
save(
  'write-scenarios',
  await compareWriteScenarios({
    setup,
    table: 'orders',
    update: { rows: 500, set: { status: "'shipped'" }, pick: 'random' },
  }),
)
const observed = await PGlite.create()
await observed.exec(setup)
save(
  'wal-observation',
  await observeWal({
    db: observed,
    run: async () => {
      await observed.exec(
        `insert into orders (customer, status, total) select i % 500, 'new', i from generate_series(1, 2000) i`,
      )
      await observed.exec(`update orders set status = 'shipped' where id <= 500`)
      await observed.exec(`begin; delete from orders where id <= 100; rollback`)
    },
  }),
)
await observed.close()
