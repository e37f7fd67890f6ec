import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { auditIndexes, compareRemedies, compareScenarios, type Database, WalcostError } from '../../src/index.js'
import { footprint } from '../support/assertions.js'
import { openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { cancelStorm } from '../support/cancel-storm.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

// A cancel (pg_cancel_backend) inside each step of a comparison, on a caller's Pool and Client: the
// call fails with ABORTED every time, whichever statement the server cancelled, and the caller's
// connections serve on. A step that caught the cancel to go on (a degraded result, or a later
// statement refused in the aborted transaction) fails here in every run, not by chance as in the soak.

const SETUP = `create table feed (id int8 primary key, at timestamptz not null, kind int4 not null) with (autovacuum_enabled = false);
  create index feed_kind_idx on feed (kind, at);
  insert into feed select i, timestamptz '2026-01-01' + i * interval '1 second', i % 30 from generate_series(1, 5000) i`

const entryPoints = {
  compareRemedies: (db: Database) =>
    compareRemedies({ db, table: 'feed', count: 300, batchSizes: [10], compression: ['pglz'], lockTimeoutMs: 10_000 }),
  compareScenarios: (db: Database) => compareScenarios({ db, table: 'feed', count: 300, lockTimeoutMs: 10_000 }),
  auditIndexes: (db: Database) =>
    auditIndexes({ db, table: 'feed', count: 300, sampleRows: 2_000, lockTimeoutMs: 10_000 }),
}
type EntryPoint = keyof typeof entryPoints

describe('a cancel inside each step of a comparison', () => {
  let server: RunningServer
  let test: TestDatabase
  beforeAll(async () => {
    server = await startPostgres()
    test = await openPostgresDatabase(server.url)
    await test.exec(SETUP)
  })
  afterAll(async () => {
    await test?.close()
    await server?.stop()
  })

  const cases = (Object.keys(entryPoints) as EntryPoint[]).flatMap((entry) =>
    (['pool', 'client'] as const).map((form) => ({ entry, form })),
  )

  it.each(cases)(
    '$entry on a $form fails with ABORTED wherever the cancel lands',
    async ({ entry, form }) => {
      const storm = await cancelStorm(test.url!)
      const pool = new pg.Pool({ connectionString: test.url, max: 2 })
      pool.on('connect', (client) => storm.watch(client))
      pool.on('error', () => undefined)
      const client = new pg.Client({ connectionString: test.url })
      client.on('error', () => undefined)
      await client.connect()
      storm.watch(client)
      const db = form === 'pool' ? pool : client
      const before = await footprint(test, 'feed')
      const outcomes: Array<{ step: string; cancelled: string | undefined; code: string | null; message: string }> = []
      try {
        // A run with no fault finds the call's steps.
        await entryPoints[entry](db)
        const steps = [...storm.steps]
        expect(steps.length).toBeGreaterThan(5)
        for (const step of steps) {
          storm.arm(step)
          const error = await entryPoints[entry](db).then(
            () => null,
            (caught: unknown) => caught,
          )
          await storm.settle()
          outcomes.push({
            step,
            cancelled: storm.cancelledStep,
            code: error === null ? null : error instanceof WalcostError ? error.code : String(error),
            message: error instanceof Error ? error.message : '',
          })
          // The caller's connections serve on, outside any transaction, with their settings as they were.
          const after = await db
            .query<{ settings: string }>(
              `select current_setting('lock_timeout') || ' ' || current_setting('default_transaction_read_only') || ' ' || (txid_current_if_assigned() is null) as settings`,
            )
            .then(
              ({ rows }) => rows[0]?.settings,
              (caught: Error) => caught.message,
            )
          expect(after, `after a cancel armed at ${step}`).toBe('0 off true')
        }
      } finally {
        await storm.close()
        await pool.end()
        await client.end()
      }
      const wrong = outcomes.filter((outcome) => outcome.cancelled !== undefined && outcome.code !== 'ABORTED')
      console.log(
        `${entry} on a ${form}: ${outcomes.length} steps, ${outcomes.filter((outcome) => outcome.cancelled).length} cancelled`,
      )
      expect(wrong).toEqual([])
      // The storm lands in nearly every step: only a step among the call's last statements can end before it does.
      expect(outcomes.filter((outcome) => outcome.cancelled).length).toBeGreaterThanOrEqual(outcomes.length * 0.8)
      expect(await footprint(test, 'feed')).toEqual(before)
    },
    1_800_000,
  )
})
