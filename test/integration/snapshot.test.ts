import { describe, expect, it } from 'vitest'
import { measureInsertCost, walSummary } from '../../src/index.js'

const setup = `create table orders (id int8 generated always as identity primary key, customer int4 not null, total numeric(12,2) not null);
  create index orders_customer_idx on orders (customer);
  insert into orders (customer, total) select i % 300, i from generate_series(1, 5000) i;`

describe('walSummary in a snapshot', () => {
  it('is the same measurement after measurement, and matches the recorded snapshot', async () => {
    const measure = async () => walSummary(await measureInsertCost({ setup, table: 'orders', count: 1_000 }))
    const first = await measure()
    expect(await measure()).toEqual(first)
    expect(first).toMatchSnapshot()
  })
})
