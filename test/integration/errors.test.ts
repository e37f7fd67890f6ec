import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type MeasureOptions, measureInsertCost } from '../../src/index.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { failure } from '../support/faults.js'

const measureFailure = (options: MeasureOptions) => failure(measureInsertCost(options))

describe('options are validated before anything runs', () => {
  it.each([
    [{ table: 't' }, 'sql'],
    [{ table: 't', sql: 'select 1', count: 3 }, 'count'],
    [{ table: '', count: 3 }, 'table'],
    [{ table: 't', count: 0 }, 'count'],
    [{ table: 't', count: -5 }, 'count'],
    [{ table: 't', count: 1e12 }, 'count'],
    [{ table: 't', count: 1.5 }, 'count'],
    [{ table: 't', count: 3, method: 'bulk' }, 'method'],
    [{ table: 't', count: 3, batchSize: 0 }, 'batchSize'],
    [{ table: 't', rows: 'not rows' }, 'rows'],
    [{ table: 't', count: 3, db: 42 }, 'db'],
    [{ table: 't', count: 3, dropIndexes: [] }, 'dropIndexes'],
    [{ table: 't', count: 3, lockTimeoutMs: 0 }, 'lockTimeoutMs'],
  ])('%j is INVALID_OPTIONS naming %s', async (options, field) => {
    const error = await measureFailure(options as MeasureOptions)
    expect(error.code).toBe('INVALID_OPTIONS')
    expect(error.field).toBe(field)
    expect(error.message).toContain(field)
  })

  it('says what the limit is for an absurd count', async () => {
    expect((await measureFailure({ table: 't', count: 1e12 })).message).toContain('50,000,000')
  })
})

describe('the embedded default', () => {
  it('starts empty, so a missing table says to use setup', async () => {
    const error = await measureFailure({ table: 'device_metrics', count: 10 })
    expect(error.code).toBe('TABLE_NOT_FOUND')
    expect(error.message).toContain('setup')
  })

  it('measures a table created by setup', async () => {
    const cost = await measureInsertCost({
      setup: 'create table t (id int8 primary key, at timestamptz not null, v float8)',
      table: 't',
      count: 1_000,
      method: 'copy',
    })
    expect(cost.server.backend).toBe('pglite')
    expect(cost.attribution).toBe('wal')
    expect(cost.rows).toBe(1_000)
    expect(cost.logicalBytes).toBe(1_000 * 24)
    expect(cost.indexes.map((index) => index.name)).toEqual(['t_pkey'])
  })

  it('reports a failing setup as SETUP_FAILED with the server error', async () => {
    const error = await measureFailure({ setup: 'create table broken (', table: 'broken', count: 1 })
    expect(error.code).toBe('SETUP_FAILED')
    expect(error.sqlState).toBe('42601')
    expect(error.cause).toBeDefined()
  })
})

describe.each(backends)('bad input on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(`create table guarded (id int8 primary key, qty int4 not null check (qty >= 0));
                     insert into guarded select i, i from generate_series(1, 10) i;
                     create view guarded_view as select * from guarded`)
  })
  afterAll(() => test.close())

  const count = async () => (await test.query<{ n: string }>('select count(*)::text as n from guarded'))[0]!.n

  it('rejects a row with an unknown column before inserting anything', async () => {
    const error = await measureFailure({ db: test.db, table: 'guarded', rows: [{ id: 100, qty: 1, colour: 'red' }] })
    expect(error.code).toBe('INVALID_ROWS')
    expect(error.message).toContain('colour')
    expect(await count()).toBe('10')
  })

  it('rejects a later row with a column the first row did not have, keeping nothing', async () => {
    const error = await measureFailure({
      db: test.db,
      table: 'guarded',
      rows: [{ id: 100 }, { id: 101, qty: 2 }],
      method: 'copy',
    })
    expect(error.code).toBe('INVALID_ROWS')
    expect(error.field).toBe('rows.1.qty')
    expect(await count()).toBe('10')
  })

  it.each(['insert', 'multirow', 'copy'] as const)(
    'reports a value of the wrong type with the server code (%s)',
    async (method) => {
      const error = await measureFailure({
        db: test.db,
        table: 'guarded',
        rows: [
          { id: 100, qty: 1 },
          { id: 101, qty: 'many' },
        ],
        method,
      })
      expect(error.code).toBe('BATCH_FAILED')
      expect(error.sqlState).toBe('22P02')
      expect(await count()).toBe('10')
    },
  )

  it('reports a constraint violation in the batch and keeps nothing', async () => {
    const error = await measureFailure({
      db: test.db,
      table: 'guarded',
      sql: 'insert into guarded values (11, 1), (12, -1)',
    })
    expect(error.code).toBe('BATCH_FAILED')
    expect(error.sqlState).toBe('23514')
    expect(error.message).toMatch(/rolled back/)
    expect(await count()).toBe('10')
  })

  it("says the failure that aborted the transaction, not a later statement's refusal in it", async () => {
    // The app's code catches its own failed insert and goes on: its next statement is refused in the
    // aborted transaction (25P02), and the measurement says why the transaction was aborted.
    const error = await measureFailure({
      db: test.db,
      table: 'guarded',
      run: async (db) => {
        await (db as pg.Client).query('insert into guarded values (12, -1)').catch(() => undefined)
        await (db as pg.Client).query('insert into guarded values (13, 1)')
      },
    })
    expect(error.code).toBe('BATCH_FAILED')
    expect(error.sqlState).toBe('23514')
    expect(error.message).toContain('guarded_qty_check')
    expect(await count()).toBe('10')
  })

  it("refuses a batch that commits walcost's transaction, however fast it runs", async () => {
    // PGlite's clock counts milliseconds: a check by transaction_timestamp() let some of these through.
    for (let attempt = 0; attempt < 20; attempt++) {
      const error = await measureFailure({ db: test.db, table: 'guarded', sql: 'commit; select 1' })
      expect(error.code).toBe('BATCH_ENDED_TRANSACTION')
    }
  })

  it('says TABLE_NOT_FOUND for an unknown table or schema', async () => {
    expect((await measureFailure({ db: test.db, table: 'nowhere', count: 1 })).code).toBe('TABLE_NOT_FOUND')
    expect((await measureFailure({ db: test.db, table: 'no_schema.guarded', count: 1 })).code).toBe('TABLE_NOT_FOUND')
    expect((await measureFailure({ db: test.db, table: '"Guarded"', count: 1 })).code).toBe('TABLE_NOT_FOUND')
    // Unquoted, the name folds to lower case as it does in SQL.
    expect((await measureInsertCost({ db: test.db, table: 'public.Guarded', count: 1 })).scenario.table).toBe(
      '"public"."guarded"',
    )
  })

  it('suggests the nearest table the role can see for a misspelt one, qualified where search_path does not find it', async () => {
    await test.exec('create schema ledger; create table ledger.entries (id int8 primary key)')
    try {
      const misspelt = await measureFailure({ db: test.db, table: 'gaurded', count: 1 })
      expect(misspelt.code).toBe('TABLE_NOT_FOUND')
      expect(misspelt.message).toContain('Did you mean guarded?')
      expect((await measureFailure({ db: test.db, table: 'entries', count: 1 })).message).toContain(
        'Did you mean ledger.entries?',
      )
      expect((await measureFailure({ db: test.db, table: 'ledger.entrys', count: 1 })).message).toContain(
        'Did you mean ledger.entries?',
      )
      expect((await measureFailure({ db: test.db, table: 'nowhere', count: 1 })).message).not.toContain('Did you mean')
    } finally {
      await test.exec('drop schema ledger cascade')
    }
  })

  it('refuses a view', async () => {
    expect((await measureFailure({ db: test.db, table: 'guarded_view', count: 1 })).code).toBe('UNSUPPORTED_TABLE')
  })

  it('names an index to drop that the table does not have', async () => {
    const error = await measureFailure({ db: test.db, table: 'guarded', count: 1, dropIndexes: ['nope'] })
    expect(error.code).toBe('INVALID_OPTIONS')
    expect(error.field).toBe('dropIndexes')
    expect(error.message).toContain('guarded_pkey')
  })

  it("refuses a multi-row statement over PostgreSQL's parameter limit", async () => {
    const error = await measureFailure({
      db: test.db,
      table: 'guarded',
      count: 10,
      method: 'multirow',
      batchSize: 40_000,
    })
    expect(error.code).toBe('INVALID_OPTIONS')
    expect(error.field).toBe('batchSize')
    expect(error.message).toContain('32767')
  })

  it('stops when the AbortSignal has fired', async () => {
    const controller = new AbortController()
    controller.abort()
    const error = await measureFailure({ db: test.db, table: 'guarded', count: 10, signal: controller.signal })
    expect(error.code).toBe('ABORTED')
    expect(await count()).toBe('10')
  })
})

describeOnPostgres('on a real server', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(`create table kept (id int8 primary key, at timestamptz not null default now(), note text);
                     create index kept_at_idx on kept (at);
                     insert into kept (id, note) select i, 'n' || i from generate_series(1, 1000) i`)
  })
  afterAll(() => test.close())

  const snapshot = async () => ({
    rows: await test.query(`select count(*)::text as n, max(id)::text as max from kept`),
    indexes: await test.query(
      `select indexrelid::regclass::text as name from pg_index where indrelid = 'kept'::regclass order by 1`,
    ),
    relations: await test.query(`select count(*)::text as n from pg_class`),
    locks: await test.query(`select count(*)::text as n from pg_locks where relation = 'kept'::regclass`),
  })

  it('leaves the rows, indexes and catalog as they were after each kind of measurement', async () => {
    const before = await snapshot()
    await measureInsertCost({ db: test.db, table: 'kept', count: 2_000, method: 'copy', checkpoint: true })
    await measureInsertCost({ db: test.db, table: 'kept', count: 500, dropIndexes: true })
    await measureInsertCost({
      db: test.db,
      table: 'kept',
      sql: `insert into kept (id) select 5000 + i from generate_series(1, 100) i`,
    })
    expect(await snapshot()).toEqual(before)
  })

  it("works on a caller's Client and Pool and leaves them usable", async () => {
    const client = new pg.Client({ connectionString: test.url })
    await client.connect()
    const pool = new pg.Pool({ connectionString: test.url, max: 1 })
    try {
      expect((await measureInsertCost({ db: client, table: 'kept', count: 100 })).rows).toBe(100)
      expect((await measureInsertCost({ db: pool, table: 'kept', count: 100, method: 'copy' })).rows).toBe(100)
      expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }])
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
    } finally {
      await client.end()
      await pool.end()
    }
  })

  it('gives up on a held lock after lockTimeoutMs with LOCK_TIMEOUT', async () => {
    const holder = new pg.Client({ connectionString: test.url })
    await holder.connect()
    try {
      await holder.query('begin; lock table kept in access share mode')
      const error = await measureFailure({
        db: test.db,
        table: 'kept',
        count: 10,
        dropIndexes: true,
        lockTimeoutMs: 200,
      })
      expect(error.code).toBe('LOCK_TIMEOUT')
      expect(error.message).toContain('lockTimeoutMs')
    } finally {
      await holder.query('rollback')
      await holder.end()
    }
    expect((await snapshot()).indexes).toHaveLength(2)
  })

  it('reports CONNECTION_FAILED for a server that is not there', async () => {
    const error = await measureFailure({ db: 'postgres://nobody:x@127.0.0.1:1/none', table: 'kept', count: 1 })
    expect(error.code).toBe('CONNECTION_FAILED')
    // A refused port is not a timeout: the message says what happened.
    expect(error.message).toMatch(/^connection refused by 127\.0\.0\.1:1: no server listens there/)
    expect(error.message).not.toContain('within')
  })

  it('says a wrong password is a failed login and an unknown database is one that does not exist', async () => {
    const wrongPassword = await measureFailure({
      db: test.url!.replace(/:[^:@/]*@/, ':wrong@'),
      table: 'kept',
      count: 1,
    })
    expect(wrongPassword.code).toBe('CONNECTION_FAILED')
    expect(wrongPassword.message).toMatch(/refused the login: authentication failed for user postgres\./)
    expect(wrongPassword.message).not.toContain('connectTimeoutMs')
    const unknownDatabase = await measureFailure({
      db: test.url!.replace(/\/[^/?]*(\?|$)/, '/no_such_database$1'),
      table: 'kept',
      count: 1,
    })
    expect(unknownDatabase.message).toMatch(/^database no_such_database does not exist on /)
    expect(unknownDatabase.message).not.toContain('within')
  })

  it('degrades for a role without CHECKPOINT or WAL-reading privileges and says which grant is missing', async () => {
    const role = `plain_${Date.now()}`
    await test.exec(`create role ${role} login password 'plain'; grant all on table kept to ${role}`)
    const url = test.url!.replace('postgres:walcost@', `${role}:plain@`)
    const cost = await measureInsertCost({ db: url, table: 'kept', count: 200, checkpoint: true })
    expect(cost.rows).toBe(200)
    expect(cost.attribution).toBe('lsn')
    expect(cost.breakdown).toBeNull()
    expect(cost.walBytes).toBe(cost.windowBytes)
    expect(cost.scenario.checkpoint).toBe(false)
    expect(cost.skipped.map((entry) => entry.step)).toEqual(['checkpoint', 'attribution'])
    expect(cost.skipped[0]!.reason).toContain('GRANT pg_checkpoint')
    expect(cost.skipped[1]!.reason).toContain('GRANT pg_read_server_files')
    expect(cost.attributionNote).toContain('other activity')
    await test.exec(`grant pg_read_server_files, pg_checkpoint to ${role}`)
    const granted = await measureInsertCost({ db: url, table: 'kept', count: 200, checkpoint: true })
    expect(granted.attribution).toBe('walinspect')
    expect(granted.skipped).toEqual([])
    expect(granted.attributionNote).toContain('GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint)')
    // pg_read_server_files alone does not let a role read the WAL itself: EXECUTE on the function does.
    await test.exec(`grant execute on function pg_read_binary_file(text, bigint, bigint) to ${role}`)
    const reading = await measureInsertCost({ db: url, table: 'kept', count: 200, checkpoint: true })
    expect(reading.attribution).toBe('wal')
    expect(reading.attributionNote).toBeNull()
    expect(reading.indexes.map((index) => index.name)).toEqual(granted.indexes.map((index) => index.name))
    for (const index of reading.indexes) expect(index.records).toBeGreaterThanOrEqual(200)
    await test.exec(`revoke execute on function pg_read_binary_file(text, bigint, bigint) from ${role}`)
    await test.exec(`revoke all on table kept from ${role}; drop owned by ${role}; drop role ${role}`)
  })
})
