// A first measurement on the embedded default: what 10,000 orders cost to insert, and where it goes.
// Run: node examples/measure.mjs (after npm install, which builds the package)
import { formatResult, measureInsertCost } from 'walcost'

const cost = await measureInsertCost({
  setup: `
    create table orders (
      id bigint generated always as identity primary key,
      customer_id int4 not null,
      placed_at timestamptz not null default now(),
      total numeric(10, 2) not null,
      note text);
    create index orders_customer_idx on orders (customer_id, placed_at);
    insert into orders (customer_id, total) select i % 5000, i % 300 from generate_series(1, 50000) i;`,
  table: 'orders',
  count: 10_000,
  method: 'copy',
  checkpoint: true,
})

console.log(formatResult(cost))
