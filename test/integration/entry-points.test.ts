import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import {
  auditIndexes,
  compareRemedies,
  compareScenarios,
  measureInsertCost,
  predictInsertCost,
} from '../../src/index.js'
import {
  formatAudit,
  formatComparison,
  formatInsertCost,
  formatResult,
  toHtml,
  toMarkdown,
  toVegaLite,
} from '../../src/report/index.js'
import { footprint } from '../support/assertions.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { failure, terminateWalcostWhen } from '../support/faults.js'

const SETUP = `create table if not exists feed (id int8 primary key, at timestamptz not null, kind int4 not null);
  create index if not exists feed_kind_idx on feed (kind, at);
  insert into feed select i, timestamptz '2026-01-01' + i * interval '1 second', i % 30 from generate_series(1, 20000) i on conflict do nothing`

// A batch that waits on the server, so that a fault can strike while it runs.
const slow = `insert into feed select 9000000 + i, now(), i % 30 from generate_series(1, 500) i; select pg_sleep(3)`
const entryPoints = [
  {
    name: 'compareScenarios',
    busy: '%pg_sleep%',
    run: (db: string, signal?: AbortSignal) =>
      compareScenarios({ db, table: 'feed', sql: slow, runsOn: 'table', signal }),
  },
  {
    name: 'compareRemedies',
    busy: '%pg_sleep%',
    run: (db: string, signal?: AbortSignal) =>
      compareRemedies({ db, table: 'feed', sql: slow, runsOn: 'table', signal }),
  },
  {
    name: 'auditIndexes',
    busy: '%walcost_scratch_%',
    run: (db: string, signal?: AbortSignal) =>
      auditIndexes({ db, table: 'feed', count: 200_000, sampleRows: 5_000, signal }),
  },
]

describeOnPostgres.each(entryPoints)('$name on a real server', ({ run, busy }) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  it("stops on the caller's AbortSignal and leaves nothing behind", async () => {
    const before = await footprint(test, 'feed')
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 700)
    expect((await failure(run(test.url!, controller.signal))).code).toBe('ABORTED')
    expect(await footprint(test, 'feed')).toEqual(before)
  })

  it('reports its backend terminated mid-run as CONNECTION_FAILED and leaves nothing behind', async () => {
    const before = await footprint(test, 'feed')
    const running = failure(run(test.url!))
    await terminateWalcostWhen(test.url!, busy)
    expect((await running).code).toBe('CONNECTION_FAILED')
    expect(await footprint(test, 'feed')).toEqual(before)
  })
})

describeOnPostgres('every entry point for a role without superuser, pg_checkpoint or pg_read_server_files', () => {
  let test: TestDatabase
  let url: string
  const role = `limited_${Date.now()}`
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
    await test.exec(
      `create role ${role} login password 'limited'; grant all on feed to ${role}; grant create, usage on schema public to ${role}`,
    )
    url = test.url!.replace('postgres:walcost@', `${role}:limited@`)
  })
  afterAll(async () => {
    await test.exec(
      `revoke all on feed from ${role}; revoke all on schema public from ${role}; drop owned by ${role}; drop role ${role}`,
    )
    await test.close()
  })

  it("compareScenarios decomposes from the scenarios' differences and says what it skipped", async () => {
    const comparison = await compareScenarios({ db: url, table: 'feed', count: 2_000 })
    expect(comparison.decomposition.method).toBe('differences')
    // Its CHECKPOINT was skipped: the first run is not labelled as a run after one.
    const first = comparison.scenarios['first-run']!
    expect(first.skipped.map((entry) => entry.step)).toEqual(['checkpoint', 'attribution'])
    expect(first.skipped[0]!.reason).toContain('GRANT pg_checkpoint')
    // Its runs measure scratch copies, whose indexes it may drop without owning the table.
    expect(comparison.startingState).toBe('scratch-copy')
    expect(Object.keys(comparison.scenarios)).toEqual([
      'first-run',
      'steady',
      'no-indexes',
      'without:feed_kind_idx',
      'without:feed_pkey',
    ])
    expect(comparison.aa.scenario).toBe('first-run')
    expect(comparison.decomposition.summary).not.toContain('after a checkpoint')
    expect(comparison.notes.join(' ')).toContain('shown as first-run, not after-checkpoint')
    // Every output format says what was skipped and why.
    for (const output of [formatComparison(comparison), toMarkdown(comparison), toHtml(comparison)]) {
      expect(output).toContain('skipped checkpoint: CHECKPOINT needs superuser')
      expect(output).toContain('its own scratch copy of the table')
      expect(output).not.toContain('after-checkpoint ')
    }
  })

  it('without CREATE on the schema, the audit, a comparison and the remedies refuse before any batch, and the table is untouched', async () => {
    const writer = `walcost_writer_${Date.now()}`
    await test.exec(`create role ${writer} login password 'writer'; grant select, insert on feed to ${writer}`)
    const writerUrl = test.url!.replace('postgres:walcost@', `${writer}:writer@`)
    const touched = async () => {
      await test.query('select pg_stat_clear_snapshot()')
      const [row] = await test.query<{ inserted: string; deleted: string; bytes: string }>(
        `select n_tup_ins::text as inserted, n_tup_del::text as deleted, pg_total_relation_size(relid)::text as bytes
           from pg_stat_user_tables where relid = 'feed'::regclass`,
      )
      return row
    }
    try {
      const before = await touched()
      const refusals = [
        () => auditIndexes({ db: writerUrl, table: 'feed', minStatsAgeDays: 0 }),
        () => compareScenarios({ db: writerUrl, table: 'feed', count: 2_000 }),
        () => compareRemedies({ db: writerUrl, table: 'feed', count: 2_000 }),
      ]
      for (const refused of refusals) {
        const error = await failure(refused())
        expect(error.code).toBe('PERMISSION_DENIED')
        expect(error.field).toBe('runsOn')
        expect(error.message).toContain(`lacks CREATE on schema "public"`)
        expect(error.message).toContain(`GRANT CREATE ON SCHEMA "public" TO "${writer}"`)
        expect(error.message).toContain("runsOn: 'table' (--runs-on table)")
      }
      // With a traffic window too, it waits out no window: the window it could not read is said first.
      const traffic = await failure(
        auditIndexes({ db: writerUrl, table: 'feed', traffic: { durationMs: 3_600_000 }, minStatsAgeDays: 0 }),
      )
      expect([traffic.code, traffic.field]).toEqual(['PERMISSION_DENIED', 'traffic'])
      // A backend's counters reach the statistics when it ends: the sessions above have ended.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(await touched()).toEqual(before)
      // Only when told to do the runs measure the real table, ordered, each rolled back.
      const onTable = await compareScenarios({ db: writerUrl, table: 'feed', count: 2_000, runsOn: 'table' })
      expect(onTable.startingState).toBe('ordered')
      // Without ownership no index may be dropped, not even in a transaction that is rolled back.
      expect(Object.keys(onTable.scenarios)).toEqual(['first-run', 'steady'])
      expect(onTable.notes.join(' ')).toContain('needs ownership of "public"."feed"')
      for (const output of [formatComparison(onTable), toMarkdown(onTable), toHtml(onTable)]) {
        expect(output).toContain('needs ownership')
      }
      // A batch given as SQL text names the real table: it measures a copy of it never, and the table only when told to.
      const text = await failure(
        compareScenarios({ db: url, table: 'feed', sql: 'insert into feed values (9900001, now(), 1)' }),
      )
      expect([text.code, text.field]).toEqual(['INVALID_OPTIONS', 'runsOn'])
      expect(text.message).toContain(
        "given as a function of (run, table) it can write to a copy. runsOn: 'table' (--runs-on table)",
      )
    } finally {
      await test.exec(`revoke all on feed from ${writer}; drop owned by ${writer}; drop role ${writer}`)
    }
  })

  it('with runsOn table, a role without INSERT on the table is told which grant it needs before any batch', async () => {
    const reader = `walcost_reader_${Date.now()}`
    await test.exec(`create role ${reader} login password 'reader'; grant select on feed to ${reader}`)
    try {
      const error = await failure(
        compareRemedies({
          db: test.url!.replace('postgres:walcost@', `${reader}:reader@`),
          table: 'feed',
          count: 2_000,
          runsOn: 'table',
        }),
      )
      expect([error.code, error.field]).toEqual(['PERMISSION_DENIED', 'runsOn'])
      expect(error.message).toContain(`lacks INSERT on it: GRANT INSERT ON "public"."feed" TO "${reader}"`)
    } finally {
      await test.exec(`revoke all on feed from ${reader}; drop owned by ${reader}; drop role ${reader}`)
    }
  })

  it('compareRemedies measures what it may and marks wal_compression unavailable without superuser', async () => {
    const result = await compareRemedies({
      db: url,
      table: 'feed',
      count: 2_000,
      batchSizes: [100],
      compression: ['pglz'],
    })
    const compression = result.remedies.find((entry) => entry.kind === 'wal-compression')!
    expect(compression.available).toBe(false)
    expect(compression.how).toContain('superuser')
    expect(result.remedies.find((entry) => entry.name === 'COPY')!.available).toBe(true)
    expect(result.startingState).toBe('scratch-copy')
    expect(result.remedies.find((entry) => entry.kind === 'drop-indexes')!.how).toContain('finds no drop candidate')
    expect(result.notes[0]).toContain('Each run started from an identical state')
    // Without CHECKPOINT nothing is labelled as after one, and the spacing remedy cannot be derived.
    const spacing = result.remedies.find((entry) => entry.kind === 'checkpoint-spacing')!
    expect([spacing.available, spacing.bytesPerRow, spacing.savingPct]).toEqual([false, null, null])
    expect(spacing.how).toMatch(/^cannot be derived: it needs the batch right after a CHECKPOINT, which was skipped/)
    expect(result.checkpointSpacing).toEqual([])
    expect(toMarkdown(result)).toContain('2,000 rows, CHECKPOINT skipped)')
    expect(toMarkdown(result)).not.toContain('after a checkpoint)')
    for (const output of [toMarkdown(result), toHtml(result)]) {
      expect(output).toContain('wal_compression = pglz is unavailable: only a superuser may SET wal_compression')
      expect(output).toContain('skipped checkpoint: CHECKPOINT needs superuser')
    }
  })

  it('shows what it could not count as unknown in every renderer, never as a number', async () => {
    const audit = await auditIndexes({ db: url, table: 'feed', count: 2_000, sampleRows: 5_000 })
    const comparison = await compareScenarios({ db: url, table: 'feed', count: 2_000, sampleRows: 5_000 })
    const cost = await measureInsertCost({ db: url, table: 'feed', count: 500 })
    expect([audit.scenarios['first-run']!.attribution, cost.attribution]).toEqual(['lsn', 'lsn'])
    // JSON: null, not 0.
    for (const index of audit.indexes) expect([index.recordsPerRow, index.fpiShare]).toEqual([null, null])
    for (const aa of [audit.aa, comparison.aa]) expect([aa.records, aa.fpiCount]).toEqual([null, null])
    expect(cost.noiseBytes).toBeNull()
    const images = comparison.decomposition.parts.find((part) => part.part === 'fpi')!
    expect([images.bytesPerRow, images.share]).toEqual([null, null])
    // Text: '-' or 'unknown'.
    expect(formatAudit(audit)).toMatch(/^feed_kind_idx\s+[\d.]+\s+-\s+-\s/m)
    expect(formatAudit(audit)).toMatch(/bytes of WAL a row in the first run \(its CHECKPOINT was skipped\)/)
    expect(formatAudit(audit)).not.toContain('after a checkpoint')
    expect(formatComparison(comparison)).toMatch(/^full-page images \(unknown: no CHECKPOINT ran\)\s+unknown\s+-$/m)
    expect(formatInsertCost(cost)).toContain('of which other activity unknown; attribution: lsn')
    for (const result of [audit, comparison]) {
      for (const output of [formatResult(result), toMarkdown(result), toHtml(result)]) {
        expect(output).not.toMatch(/differs by 0 records|0 full-page images and/)
        expect(output).toContain('differs by an unknown number of records and full-page images')
      }
    }
    expect(toMarkdown(audit)).toMatch(/\| feed_kind_idx \| [\d.]+ \| {2}\| {2}\|/)
    expect(JSON.stringify(toVegaLite(audit))).not.toContain('"value":0')
  })

  it('predictInsertCost needs nothing but the catalog', async () => {
    const prediction = await predictInsertCost({ db: url, table: 'feed' })
    expect(prediction.indexes).toHaveLength(2)
  })
})
