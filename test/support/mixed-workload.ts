import pg from 'pg'

// Every index access method, TOAST, a sequence, and tables that the window truncates, clusters,
// vacuums and drops. Committed before the window opens.
export const MIXED_SETUP = `
  create table items (id int8 primary key, v int4 not null, note text, tags text[], p point, h uuid, at timestamptz, body text)
    with (autovacuum_enabled = false, fillfactor = 70);
  create index items_v on items (v);
  create index items_tags on items using gin (tags);
  create index items_p on items using gist (p);
  create index items_at on items using brin (at);
  create index items_h on items using hash (h);
  insert into items select i, i % 100, 'n', array['t' || i % 37], point(i % 101, i % 103), md5(i::text)::uuid,
    timestamptz '2026-01-01' + i * interval '1 s', null from generate_series(1, 5000) i;
  create table scratch (id int4, t text) with (autovacuum_enabled = false);
  insert into scratch select i, 's' || i from generate_series(1, 2000) i;
  create table clustered (id int4 primary key, v int4) with (autovacuum_enabled = false);
  insert into clustered select i, (i * 7919) % 1000 from generate_series(1, 3000) i;
  create table vacuumed (id int4, v int4) with (autovacuum_enabled = false);
  insert into vacuumed select i, i from generate_series(1, 5000) i;
  delete from vacuumed where id % 2 = 0;
  create table doomed (id int4 primary key);
  create sequence seq;`

/** One in five rows carries a text of 3,200 hex digits: pglz leaves it long, so it goes to TOAST. */
export const insertItems = (from: number, count: number) => `
  insert into items select i, i % 100, 'n', array['t' || i % 37, 'u' || i % 11], point(i % 101, i % 103), md5(i::text)::uuid,
    timestamptz '2026-01-01' + i * interval '1 s',
    case when i % 5 = 0 then (select string_agg(md5((i * 1000 + g)::text), '') from generate_series(1, 100) g) end
    from generate_series(${from}, ${from + count - 1}) i`

/** The mixed workload, from three connections at once. */
export async function mixedWorkload(url: string): Promise<void> {
  const clients = await Promise.all(
    [0, 1, 2].map(async () => {
      const client = new pg.Client({ connectionString: url })
      await client.connect()
      return client
    }),
  )
  const [writer, transactions, maintenance] = clients as [pg.Client, pg.Client, pg.Client]
  try {
    await Promise.all([
      (async () => {
        await writer.query(insertItems(10_000, 2_000))
        // HOT: only an unindexed column changes, and fillfactor 70 leaves room on the page.
        await writer.query(`update items set note = 'hot' where id between 1 and 400`)
        await writer.query(`update items set v = v + 1 where id between 401 and 800`)
        await writer.query(`delete from items where id between 801 and 1000`)
        // A read after the checkpoint sets hint bits on pages no write changed since.
        await writer.query(`select count(*) from items where id > 4000`)
      })(),
      (async () => {
        await transactions.query('begin')
        await transactions.query(insertItems(20_000, 300))
        await transactions.query('rollback')
        await transactions.query('begin')
        await transactions.query(insertItems(30_000, 100))
        await transactions.query('savepoint s')
        await transactions.query(insertItems(31_000, 100))
        await transactions.query('rollback to savepoint s')
        await transactions.query('commit')
        for (let i = 0; i < 50; i++) await transactions.query(`select nextval('seq')`)
      })(),
      (async () => {
        await maintenance.query('checkpoint')
        // The old files take WAL before the rewrites, so each relation shows both.
        await maintenance.query(`insert into scratch select i, 'before' from generate_series(1, 200) i`)
        await maintenance.query(`insert into clustered select i, i from generate_series(5000, 5200) i`)
        await maintenance.query('truncate scratch')
        await maintenance.query(`insert into scratch select i, 'again' from generate_series(1, 500) i`)
        await maintenance.query('cluster clustered using clustered_pkey')
        await maintenance.query('vacuum vacuumed')
        await maintenance.query('insert into doomed select generate_series(1, 100)')
        await maintenance.query('drop table doomed')
      })(),
    ])
  } finally {
    await Promise.all(clients.map((client) => client.end()))
  }
}
