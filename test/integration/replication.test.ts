import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { observeWal } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import { startRefusingPooler } from '../support/refusing-pooler.js'
import {
  expectRouteSplits,
  INSPECTOR_SETUP,
  REPLICATION_ROUTE,
  roleUrl,
  STREAMER_SETUP,
  WALINSPECT_ROUTE,
} from '../support/replication-route.js'

// A server of its own: the files route reads the same windows from its pg_wal folder.
describeOnPostgres('the WAL by the least-privileged routes on PostgreSQL 18', () => {
  let server: RunningServer
  let admin: pg.Client
  beforeAll(async () => {
    server = await startPostgres()
    admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query(STREAMER_SETUP)
    await admin.query(INSPECTOR_SETUP)
  })
  afterAll(async () => {
    await admin?.end()
    await server?.stop()
  })

  it('gives a role with only REPLICATION every relation, split as the files and pg_walinspect split it, and leaves no slot', async () => {
    await expectRouteSplits(server, admin, 18, REPLICATION_ROUTE)
  })

  it('gives a pg_read_server_files role every relation through pg_walinspect, split as the files split it', async () => {
    await expectRouteSplits(server, admin, 18, WALINSPECT_ROUTE)
  })

  it('says why a REPLICATION role was refused its replication connection, behind a pooler that refuses them', async () => {
    const pooler = await startRefusingPooler(Number(new URL(server.url).port))
    try {
      const url = roleUrl(server, 'streamer', 'streamer').replace(/:\d+\//, `:${pooler.port}/`)
      const observation = await observeWal({
        db: url,
        run: () => admin.query(`insert into streamed select g, 'refused' from generate_series(50000000, 50000099) g`),
      })
      expect(observation.walSource).toBe('totals')
      expect(observation.attributionNote).toContain(
        'the replication connection walcost opened was refused (unsupported startup parameter: replication',
      )
      expect(observation.attributionNote).toContain('rather than through a pooler')
    } finally {
      await pooler.close()
    }
  })
})
