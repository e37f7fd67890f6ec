import pg from 'pg'
import { afterAll, beforeAll, it } from 'vitest'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import { expectReplicationRoute, STREAMER_SETUP } from '../support/replication-route.js'

// A server of its own: the files route reads the same windows from its pg_wal folder.
describeOnPostgres('the WAL over the replication protocol on PostgreSQL 18', () => {
  let server: RunningServer
  let admin: pg.Client
  beforeAll(async () => {
    server = await startPostgres()
    admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query(STREAMER_SETUP)
  })
  afterAll(async () => {
    await admin?.end()
    await server?.stop()
  })

  it('gives a role with only REPLICATION every relation, split as the files and pg_walinspect split it, and leaves no slot', async () => {
    await expectReplicationRoute(server, admin, 18)
  })
})
