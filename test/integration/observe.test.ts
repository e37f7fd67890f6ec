import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { observeWal, WalcostError } from '../../src/index.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { expectAgreesWithWalinspect, named } from '../support/block-info.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname

// Every index access method, TOAST, a sequence, and tables that the window truncates, clusters,
// vacuums and drops. Committed before the window opens.
const SETUP = `
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
const insertItems = (from: number, count: number) => `
  insert into items select i, i % 100, 'n', array['t' || i % 37, 'u' || i % 11], point(i % 101, i % 103), md5(i::text)::uuid,
    timestamptz '2026-01-01' + i * interval '1 s',
    case when i % 5 = 0 then (select string_agg(md5((i * 1000 + g)::text), '') from generate_series(1, 100) g) end
    from generate_series(${from}, ${from + count - 1}) i`

/** The mixed workload, from three connections at once. */
async function mixedWorkload(url: string): Promise<void> {
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

describeOnPostgres('observeWal on PostgreSQL 18', () => {
  let test: TestDatabase
  let databaseOid: number
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
    const [row] = await test.query<{ oid: string }>(
      'select oid::text from pg_database where datname = current_database()',
    )
    databaseOid = Number(row!.oid)
  })
  afterAll(async () => {
    await test.close()
  })

  it('splits a window of mixed committed and aborted work from several connections as pg_walinspect does', async () => {
    const observation = await observeWal({ db: test.url!, run: () => mixedWorkload(test.url!) })
    expect(observation.kind).toBe('wal-observation')
    expect(observation.attribution).toBe('wal')
    await expectAgreesWithWalinspect(test, observation)

    const relations = observation.relations!
    // Every relation of this database and every shared catalog is named, however its files changed.
    const ours = relations.filter((relation) => relation.databaseOid === databaseOid || relation.databaseOid === 0)
    expect(ours.filter((relation) => relation.name === null)).toEqual([])
    for (const [name, kind] of [
      ['items', 'table'],
      ['items_pkey', 'index'],
      ['items_v', 'index'],
      ['items_tags', 'index'],
      ['items_p', 'index'],
      ['items_at', 'index'],
      ['items_h', 'index'],
      ['seq', 'sequence'],
      ['scratch', 'table'],
      ['clustered', 'table'],
      ['clustered_pkey', 'index'],
      ['vacuumed', 'table'],
      ['doomed', 'table'],
    ] as const) {
      expect(named(observation, name)?.kind, name).toBe(kind)
    }
    expect(named(observation, 'items_tags')!.table).toBe('public.items')
    const toast = relations.find((relation) => relation.kind === 'toast' && relation.table === 'public.items')
    expect(toast?.schema).toBe('pg_toast')
    expect(toast!.bytes).toBeGreaterThan(100_000)
    // Rewritten: the old file (named at the start) and the new one (at the end) are one relation.
    for (const name of ['scratch', 'clustered', 'clustered_pkey']) {
      const files = named(observation, name)!.files
      expect(
        files.some((file) => file.dropped && !file.created),
        name,
      ).toBe(true)
      expect(
        files.some((file) => file.created && !file.dropped),
        name,
      ).toBe(true)
    }
    expect(named(observation, 'doomed')!.files.every((file) => file.dropped)).toBe(true)
    const items = named(observation, 'items')!
    const typeNames = items.recordTypes.map((type) => type.type)
    for (const type of ['Heap/INSERT', 'Heap/HOT_UPDATE', 'Heap/UPDATE', 'Heap/DELETE'])
      expect(typeNames).toContain(type)
    expect(named(observation, 'vacuumed')!.recordTypes.some((type) => type.type.startsWith('Heap2/PRUNE'))).toBe(true)

    const transactions = observation.transactions!
    // The rolled-back transaction and the rolled-back subtransaction.
    expect(transactions.aborted).toBeGreaterThanOrEqual(2)
    expect(transactions.abortedBytes).toBeGreaterThan(50_000)
    expect(transactions.committed).toBeGreaterThanOrEqual(10)
    const reasons = observation.fpiReasons!
    expect(reasons.afterCheckpoint.count).toBeGreaterThan(0)
    if (observation.server.dataChecksums || observation.server.walLogHints)
      expect(reasons.hintBits.count).toBeGreaterThan(0)
    expect(reasons.afterCheckpoint.count + reasons.hintBits.count + reasons.other.count).toBe(
      observation.window.fpiCount,
    )
    const kinds = observation.unattributed!.map((part) => part.kind)
    for (const kind of ['transactions', 'checkpoints', 'alignment', 'page headers']) expect(kinds).toContain(kind)
    expect(observation.notes.some((note) => note.includes('checkpoint'))).toBe(true)
    expect(observation.window.statWal.records).toBeGreaterThan(0)
    expect(JSON.parse(JSON.stringify(observation))).toEqual(observation)
  })

  it('gives a role that may not read WAL files the totals, and names the grant that gives the split', async () => {
    const role = `walcost_observer_${Math.random().toString(36).slice(2, 8)}`
    await test.exec(`create role ${role} login password 'observer'`)
    try {
      const url = test.url!.replace(/\/\/[^@]*@/, `//${role}:observer@`)
      const observation = await observeWal({
        db: url,
        // Another backend sends its WAL counters when it goes idle, at most once a second, unless asked.
        run: async () => {
          await test.exec(insertItems(40_000, 500))
          await test.exec('select pg_stat_force_next_flush()')
        },
      })
      expect(observation.attribution).toBe('lsn')
      expect(observation.relations).toBeNull()
      expect(observation.unattributed).toBeNull()
      expect(observation.transactions).toBeNull()
      expect(observation.window.records).toBeNull()
      expect(observation.window.fpiCount).toBeNull()
      expect(observation.window.bytes).toBeGreaterThan(100_000)
      expect(observation.window.statWal.records).toBeGreaterThan(0)
      expect(observation.attributionNote).toContain(
        'GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint)',
      )
    } finally {
      await test.exec(`drop role ${role}`)
    }
  })

  it('observes for a duration, and says when the command it runs failed', async () => {
    const writing = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 300))
      await test.exec(insertItems(50_000, 500))
    })()
    const observation = await observeWal({ db: test.url!, durationMs: 2_000 })
    await writing
    expect(named(observation, 'items')!.records).toBeGreaterThanOrEqual(500)
    expect(observation.window.durationMs).toBeGreaterThanOrEqual(2_000)
    const failed = await run(process.execPath, [cli, 'observe', '--url', test.url!, '--', 'sh', '-c', 'exit 3']).catch(
      (error: { code: number; stdout: string }) => error,
    )
    expect('code' in failed ? failed.code : 0).toBe(3)
    expect(failed.stdout).toContain('The command exited with status 3.')
  })
})

describe.each(backends.filter((backend) => backend.name === 'pglite'))('observeWal on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(SETUP)
  })
  afterAll(async () => {
    await test.close()
  })

  it('observes the window of a run, as pg_walinspect reads it', async () => {
    const observation = await observeWal({
      db: test.db,
      run: async () => {
        await test.exec(insertItems(10_000, 1_000))
        await test.exec('truncate scratch')
        await test.exec(`begin; ${insertItems(20_000, 100)}; rollback`)
      },
    })
    await expectAgreesWithWalinspect(test, observation)
    expect(observation.relations!.every((relation) => relation.name !== null)).toBe(true)
    expect(named(observation, 'items_tags')!.records).toBeGreaterThan(1_000)
    expect(observation.transactions!.aborted).toBe(1)
  })

  it('refuses a duration: nothing else can write to PGlite meanwhile', async () => {
    const observing = observeWal({ db: test.db, durationMs: 1_000 })
    await expect(observing).rejects.toThrow(WalcostError)
    await expect(observing).rejects.toMatchObject({ code: 'INVALID_OPTIONS', field: 'durationMs' })
  })
})
