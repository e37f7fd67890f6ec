import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compareMigration, type InsertCost, measureInsertCost } from '../../src/index.js'
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

/** Bytes a row of each relation, images included (`images: false`: records only), as the comparison names them. */
const byRelation = (cost: InsertCost, { images = true } = {}) =>
  Object.fromEntries(
    [
      ['heap', cost.heap] as const,
      ...cost.indexes.map((index) => [`index ${index.name}`, index] as const),
      ...cost.otherRelations.map((relation) => [`relation ${relation.name}`, relation] as const),
    ].map(([part, relation]) => [
      part,
      ((relation?.walBytes ?? 0) - (images ? 0 : (relation?.fpiBytes ?? 0))) / cost.rows,
    ]),
  )

describe.each(backends)('compareMigration on $name', (backend) => {
  // A migration names the real table, so on a real server its runs measure the table only when told to.
  const migrating = { ...batch, ...(backend.name === 'pglite' ? {} : { runsOn: 'table' as const }) }
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
      // After a CHECKPOINT each state starts alike however it was reached, images included.
      comparison = await compareMigration({ db: compared.db, ...migrating, checkpoint: true, migration })
      // The two states measured independently, each on a fresh database of its own: as it is, and migrated (committed).
      asItIs = await backend.open()
      await asItIs.exec(SETUP)
      before = await measureInsertCost({ db: asItIs.db, ...batch, checkpoint: true })
      migrated = await backend.open()
      await migrated.exec(SETUP)
      await migrated.exec(migration)
      after = await measureInsertCost({ db: migrated.db, ...batch, checkpoint: true })
    })
    afterAll(async () => {
      for (const db of [compared, asItIs, migrated]) await db?.close()
    })

    it('reports each part of both states as the independent measurements do', () => {
      // PGlite measures every run on a clone: alike to the byte. On a real server the runs follow one another on
      // the table (the migration names it), and each relation's resolution states how far they drift.
      for (const [state, cost] of [
        ['before', before],
        ['after', after],
      ] as const) {
        // A catalog's hint-bit images depend on which of its pages the session read since the checkpoint.
        const catalog = (part: string) => part.startsWith('relation pg_')
        const measured = byRelation(cost)
        const reported = comparison.changes.filter(
          (entry) => !['total', 'other'].includes(entry.part) && !catalog(entry.part) && entry[state] !== null,
        )
        expect(reported.map((entry) => entry.part).sort()).toEqual(
          Object.keys(measured)
            .filter((part) => !catalog(part))
            .sort(),
        )
        for (const entry of reported) {
          const bytes = measured[entry.part] ?? 0
          const tolerance = (backend.name === 'pglite' ? 0.02 * bytes : entry.resolution) + 2
          expect(Math.abs((entry[state] ?? 0) - bytes), `${state} ${entry.part}`).toBeLessThanOrEqual(tolerance)
        }
      }
      const tolerance = (bytes: number) => (backend.name === 'pglite' ? 0.02 * bytes : comparison.aa.bytesPerRow) + 2
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

  it.each([false, true])(
    "with checkpoint %s, an index changes only itself beyond each relation's resolution, and says which state each side ran in",
    async (checkpoint) => {
      const db = await backend.open()
      try {
        await db.exec(SETUP)
        const comparison = await compareMigration({
          db: db.db,
          ...migrating,
          checkpoint,
          migration: MIGRATIONS['an index'],
        })
        const [total, ...relations] = comparison.changes
        expect(total).toMatchObject({ part: 'total', noise: false })
        const changed = relations.filter((entry) => !entry.noise).map((entry) => entry.part)
        // 'other' (records of no relation, and the WAL page headers) grows with the volume the index adds.
        expect(changed.filter((part) => part !== 'other')).toEqual(['index orders_total_idx'])
        const other = relations.find((entry) => entry.part === 'other')
        expect(Math.abs(other?.change ?? 0)).toBeLessThanOrEqual(0.01 * (total?.change ?? 0) + (other?.resolution ?? 0))
        for (const entry of relations.filter((relation) => relation.part !== 'index orders_total_idx')) {
          expect(entry.resolution, entry.part).toBeGreaterThanOrEqual(0.05)
          if (entry.part !== 'other') expect(comparison.summary, entry.part).not.toContain(`${entry.part} `)
        }
        const condition = checkpoint ? 'after-checkpoint' : 'steady'
        expect(comparison.states.before.condition).toBe(condition)
        expect(comparison.states.after.condition).toBe(condition)
        expect(comparison.before.scenario.checkpoint).toBe(checkpoint)
        for (const state of ['before', 'after'] as const) {
          const cost = comparison[state]
          expect(comparison.states[state].fpiCount).toBe(cost.fpiCount)
          expect(comparison.states[state].fpiBytesPerRow).toBeCloseTo((cost.breakdown?.fpiBytes ?? -1) / cost.rows, 6)
        }
        if (checkpoint) expect(comparison.states.before.fpiCount).toBeGreaterThan(0)
        // A fresh clone starts right after a checkpoint: steady, it is measured after a warm-up run, with no images left.
        if (!checkpoint && backend.name === 'pglite') expect(comparison.states.before.fpiCount).toBe(0)
        expect(comparison.notes[0]).toMatch(
          checkpoint
            ? /^Both states were measured right after a CHECKPOINT; the batch's pages took [\d,]+ full-page images?/
            : /^Both states were measured in steady state, without a CHECKPOINT before it[^;]*; the batch's pages took [\d,]+ full-page images?/,
        )
      } finally {
        await db.close()
      }
    },
  )

  it('leaves an index the migration does not touch unchanged where its keys repeat (deduplication), steady', async () => {
    // An empty table whose second index is on (customer_id, now()): each batch's keys repeat, and
    // the index deduplicates its leaves, which the warm-up run's rolled-back rows change.
    const db = await backend.open()
    try {
      await db.exec(`create table orders (id bigint generated always as identity primary key, customer_id int4 not null,
                                          placed_at timestamptz not null default now(), total numeric(10, 2) not null, note text);
                     create index orders_customer_idx on orders (customer_id, placed_at)`)
      const comparison = await compareMigration({
        db: db.db,
        ...migrating,
        count: 5_000,
        migration: MIGRATIONS['an index'],
      })
      const changed = comparison.changes.filter((entry) => !entry.noise).map((entry) => entry.part)
      expect(changed.filter((part) => part !== 'other')).toEqual(['total', 'index orders_total_idx'])
      const untouched = comparison.changes.find((entry) => entry.part === 'index orders_customer_idx')
      expect(untouched?.before).toBeGreaterThan(50)
      expect(comparison.summary).not.toContain('orders_customer_idx')
    } finally {
      await db.close()
    }
  })

  it('shows each kind of change where it lands', async () => {
    const db = await backend.open()
    try {
      await db.exec(SETUP)
      const index = await compareMigration({ db: db.db, ...migrating, migration: MIGRATIONS['an index'] })
      expect(index.changes.find((entry) => entry.part === 'index orders_total_idx')).toMatchObject({ before: null })
      expect(index.summary).toMatch(/new index orders_total_idx \+[\d.]+ bytes a row/)
      const column = await compareMigration({
        db: db.db,
        ...migrating,
        migration: MIGRATIONS['a NOT NULL column with a default'],
      })
      // The default's 13 bytes (a 1-byte header and 12 characters) are stored in every new heap tuple.
      const heap = (cost: InsertCost) => byRelation(cost, { images: false }).heap ?? 0
      expect(heap(column.after) - heap(column.before)).toBeGreaterThanOrEqual(12)
      expect(heap(column.after) - heap(column.before)).toBeLessThanOrEqual(16)
      const trigger = await compareMigration({
        db: db.db,
        ...migrating,
        migration: MIGRATIONS['an AFTER INSERT trigger'],
      })
      expect(trigger.changes.map((entry) => entry.part)).toContain('relation order_audit')
      expect(trigger.summary).toContain('new relation order_audit')
    } finally {
      await db.close()
    }
  })
})
