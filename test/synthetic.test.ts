import { describe, expect, it } from 'vitest'
import { measureInsertCost } from '../src/index.js'
import { backends } from './support/backends.js'

const SETUP = `create table customers (id int8 primary key, region text not null, unique (id, region));
  insert into customers select i, 'r' || (i % 5) from generate_series(1, 1000) i;
  create table orders (id int8 generated always as identity primary key,
    customer_id int8 not null references customers (id), cid int8, region text,
    tags text[] not null, scores int4[], foreign key (cid, region) references customers (id, region));
  create index on orders (customer_id);`

describe.each(backends)('count rows on $name', (backend) => {
  it("fill foreign keys from the parent's keys and arrays from their element type, and the parent's locks are measured", async () => {
    const test = await backend.open()
    try {
      await test.exec(SETUP)
      const cost = await measureInsertCost({ db: test.db, table: 'orders', count: 2_000 })
      expect(cost.rows).toBe(2_000)
      // Each referenced parent row is locked FOR KEY SHARE once per transaction: a Heap/LOCK record.
      const parent = cost.otherRelations.find((relation) => relation.name === 'customers')
      const locks = parent?.recordTypes.find((type) => type.type === 'Heap/LOCK')?.records ?? 0
      expect(locks).toBeGreaterThan(500)
      expect(locks).toBeLessThanOrEqual(1_000)
    } finally {
      await test.close()
    }
  })

  it.each(['insert', 'multirow', 'copy'] as const)('insert bytea values with method %s', async (method) => {
    const test = await backend.open()
    try {
      await test.exec('create table blobs (id int8 primary key, raw bytea not null)')
      const cost = await measureInsertCost({ db: test.db, table: 'blobs', count: 100, method })
      expect(cost.rows).toBe(100)
      expect(cost.logicalBytes).toBeGreaterThan(100 * 8)
    } finally {
      await test.close()
    }
  })
})
