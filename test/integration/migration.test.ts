import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compareMigration, type InsertCost, measureInsertCost } from '../../src/index.js'
import { partLabel, partsOf } from '../../src/measure/parts.js'
import { backends, type TestDatabase } from '../support/backends.js'

const SETUP = `
  create table orders (id int8 generated always as identity primary key, customer int4 not null,
                       placed_at timestamptz not null default now(), total numeric(12,2) not null);
  create index orders_customer_idx on orders (customer);
  create table order_audit (order_id int8 not null, at timestamptz not null default now());
  insert into orders (customer, total) select i % 300, i from generate_series(1, 20000) i;
  analyze orders;`

const MIGRATIONS = {
  'an index': 'create index orders_total_idx on orders (total)',
  'a NOT NULL column with a default': "alter table orders add column channel text not null default 'web-checkout'",
  'an AFTER INSERT trigger': `
    create function audit_order() returns trigger language plpgsql as $$
      begin insert into order_audit (order_id) values (new.id); return new; end $$;
    create trigger orders_audit after insert on orders for each row execute function audit_order();`,
}

const batch = { table: 'orders', count: 2_000 }

/** Bytes a row by part, as the comparison names them. */
const byPart = (cost: InsertCost) =>
  Object.fromEntries((partsOf(cost) ?? []).map((part) => [partLabel(part), part.bytes / cost.rows]))

describe.each(backends)('compareMigration on $name', (backend) => {
  describe.each(Object.entries(MIGRATIONS))('adding %s', (_, migration) => {
    let compared: TestDatabase
    let asItIs: TestDatabase
    let migrated: TestDatabase
    let comparison: Awaited<ReturnType<typeof compareMigration>>
    let before: InsertCost
    let after: InsertCost
    beforeAll(async () => {
      compared = await backend.open()
      await compared.exec(SETUP)
      comparison = await compareMigration({ db: compared.db, ...batch, migration })
      // The two states measured independently, each on a fresh database of its own: as it is, and migrated (committed).
      asItIs = await backend.open()
      await asItIs.exec(SETUP)
      before = await measureInsertCost({ db: asItIs.db, ...batch })
      migrated = await backend.open()
      await migrated.exec(SETUP)
      await migrated.exec(migration)
      after = await measureInsertCost({ db: migrated.db, ...batch })
    })
    afterAll(async () => {
      for (const db of [compared, asItIs, migrated]) await db?.close()
    })

    it('reports each part of both states as the independent measurements do', () => {
      // PGlite measures every run on a clone: alike to the byte. On a real server the runs follow one another on
      // the table (the migration names it), and the comparison's own A/A check states how far they drift.
      const tolerance = (bytes: number) => (backend.name === 'pglite' ? 0.02 * bytes : comparison.aa.bytesPerRow) + 2
      for (const [state, cost] of [
        ['before', before],
        ['after', after],
      ] as const) {
        const measured = byPart(cost)
        const reported = Object.fromEntries(
          comparison.changes
            .filter((entry) => entry.part !== 'total' && entry[state] !== null)
            .map((entry) => [entry.part, entry[state] as number]),
        )
        expect(Object.keys(reported).sort()).toEqual(Object.keys(measured).sort())
        for (const [part, bytes] of Object.entries(measured)) {
          if (part === 'full-page images') continue
          expect(Math.abs((reported[part] ?? 0) - bytes), `${state} ${part}`).toBeLessThanOrEqual(tolerance(bytes))
        }
      }
      const total = comparison.changes[0]
      expect(total?.part).toBe('total')
      expect(
        Math.abs((total?.change ?? 0) - ((after.bytesPerRow ?? 0) - (before.bytesPerRow ?? 0))),
      ).toBeLessThanOrEqual(tolerance(after.bytesPerRow ?? 0))
    })

    it('names what the migration added in its summary, and leaves nothing behind', async () => {
      expect(comparison.summary).toMatch(
        /^The migration adds [\d.]+ bytes a row \(\+[\d.]+%\) to inserts into "public"\."orders"/,
      )
      const [state] = await compared.query<{ columns: number; indexes: number; triggers: number }>(
        `select (select count(*)::int from pg_attribute where attrelid = 'orders'::regclass and attnum > 0 and not attisdropped) as columns,
                (select count(*)::int from pg_index where indrelid = 'orders'::regclass) as indexes,
                (select count(*)::int from pg_trigger where tgrelid = 'orders'::regclass and not tgisinternal) as triggers`,
      )
      expect(state).toEqual({ columns: 4, indexes: 2, triggers: 0 })
    })
  })

  it('shows each kind of change where it lands', async () => {
    const db = await backend.open()
    try {
      await db.exec(SETUP)
      const index = await compareMigration({ db: db.db, ...batch, migration: MIGRATIONS['an index'] })
      expect(index.changes.find((entry) => entry.part === 'index orders_total_idx')).toMatchObject({ before: null })
      expect(index.summary).toMatch(/new index orders_total_idx \+[\d.]+ bytes a row/)
      const column = await compareMigration({
        db: db.db,
        ...batch,
        migration: MIGRATIONS['a NOT NULL column with a default'],
      })
      // The default's 13 bytes (a 1-byte header and 12 characters) are stored in every new heap tuple.
      const heap = column.changes.find((entry) => entry.part === 'heap')
      expect(heap?.change).toBeGreaterThanOrEqual(12)
      expect(heap?.change).toBeLessThanOrEqual(16)
      const trigger = await compareMigration({ db: db.db, ...batch, migration: MIGRATIONS['an AFTER INSERT trigger'] })
      expect(trigger.changes.map((entry) => entry.part)).toContain('relation order_audit')
      expect(trigger.summary).toContain('new relation order_audit')
    } finally {
      await db.close()
    }
  })
})
