import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { inspectWal } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

// Records longer than a segment (logical messages of several MB, with 1 MB segments) read by
// stretches in parallel: a stretch boundary inside such a record must read as the whole archive
// does in one thread.

describeOnPostgres('records longer than a segment, read in parallel', () => {
  let server: RunningServer
  let folder: string
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'walcost-long-records-'))
    server = await startPostgres([], undefined, { initdbFlags: ['--wal-segsize=1'] })
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      await client.query('create table small (id int8 primary key, note text)')
      // Small records, a 3.5 MB message, small records, a 2.2 MB one right after a 1.2 MB one, small ones.
      for (const size of [3_500_000, 1_200_000, 2_200_000]) {
        await client.query(`insert into small select i, 'x' from generate_series(1, 3000) i`)
        await client.query(`select pg_logical_emit_message(true, 'walcost', repeat('m', ${size}))`)
        await client.query('delete from small')
      }
      await client.query('select pg_switch_wal()')
    } finally {
      await client.end()
    }
    await mkdir(join(folder, 'wal'))
    for (const name of await readdir(join(server.dataDir, 'pg_wal')))
      if (/^[0-9A-F]{24}$/.test(name)) await copyFile(join(server.dataDir, 'pg_wal', name), join(folder, 'wal', name))
  }, 300_000)
  afterAll(async () => {
    await server?.stop()
    await rm(folder, { recursive: true, force: true })
  })

  it('gives the same reading with 1 to 8 workers, whatever stretch boundary falls inside a long record', async () => {
    const dir = join(folder, 'wal')
    const whole = await inspectWal({ dir, parallel: 1 })
    expect(whole.files.gaps).toEqual([])
    expect(whole.window.bytes).toBeGreaterThan(6_900_000)
    // The messages name no relation.
    const unattributed = whole.unattributed?.reduce((sum, part) => sum + part.bytes, 0) ?? 0
    expect(unattributed).toBeGreaterThan(6_900_000)
    for (const parallel of [2, 3, 4, 5, 6, 7, 8])
      expect(await inspectWal({ dir, parallel }), `parallel ${parallel}`).toEqual(whole)
  })
})
