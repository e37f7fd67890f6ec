import { spawn } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { WalObservation } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `walcost top --json` at `url` and, once it has printed its first interval (read, so the next
 * one starts where it ended), stops the process (SIGSTOP), runs `meanwhile`, and lets it go on
 * (SIGCONT): the interval under way is read only after `meanwhile` has done what it does to the WAL.
 */
function topHeldAfterFirstInterval(url: string, meanwhile: () => Promise<void>): Promise<Ran> {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'top', '--url', url, '--json', '--interval', '1', '--seconds', '4'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let held = false
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (held || !stdout.includes('\n')) return
      held = true
      child.kill('SIGSTOP')
      meanwhile().then(
        () => child.kill('SIGCONT'),
        (error: unknown) => {
          child.kill('SIGCONT')
          child.kill('SIGINT')
          reject(error)
        },
      )
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Committed inserts from a connection of its own until `stop` says: the WAL the watch reads. */
async function workload(url: string, stop: () => boolean): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (let i = 0; !stop(); i++) {
      await client.query(`insert into events select g, md5(g::text) from generate_series($1::int8, $1::int8 + 199) g`, [
        i * 200,
      ])
    }
  } finally {
    await client.end()
  }
}

// A server of its own: the test recycles every segment before the current one, and no other slot
// may hold them (wal_keep_size is 0 by default, and nothing archives).
describeOnPostgres('walcost top when a checkpoint recycles a segment before it is read', () => {
  let server: RunningServer
  let admin: pg.Client
  const roleUrl = (role: string) => server.url.replace(/\/\/[^@]*@/, `//${role}:watcher@`)
  beforeAll(async () => {
    server = await startPostgres(['-c', 'wal_keep_size=0', '-c', 'max_wal_size=64MB', '-c', 'min_wal_size=32MB'])
    admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    // A role that may read WAL files but not make a replication slot, and one that may do both.
    await admin.query(`create table events (id int8, payload text);
      create role reader login password 'watcher';
      create role replicator login replication password 'watcher';
      grant execute on function pg_read_binary_file(text, bigint, bigint) to reader, replicator;
      grant insert on events to reader, replicator`)
  })
  afterAll(async () => {
    await admin?.end()
    await server?.stop()
  })

  /**
   * `walcost top` as `role`, under a workload of its own, held after its first interval while the
   * segment its next interval starts in is switched away from and two checkpoints (each recycles
   * what lies before its redo) leave nothing of it in pg_wal unless a slot keeps it. `gone`: that
   * segment's file was no longer there when top went on.
   */
  const topAcrossRecycling = async (role: string): Promise<Ran & { gone: boolean }> => {
    let gone = false
    const recycle = async () => {
      const [row] = (
        await admin.query<{ segment: string }>(`select pg_walfile_name(pg_current_wal_insert_lsn()) as segment`)
      ).rows
      for (let i = 0; i < 2; i++) {
        await admin.query(`insert into events select g, md5(g::text) from generate_series(1, 1000) g`)
        await admin.query('select pg_switch_wal()')
        await admin.query('checkpoint')
      }
      const files = await admin.query(`select name from pg_ls_waldir() where name = $1`, [row!.segment])
      gone = files.rows.length === 0
    }
    let running = true
    const writing = workload(roleUrl(role), () => !running)
    try {
      return { ...(await topHeldAfterFirstInterval(roleUrl(role), recycle)), gone }
    } finally {
      running = false
      await writing
    }
  }

  it('fails with WAL_UNREADABLE, reports nothing of that interval, and says which grant or setting keeps the WAL', async () => {
    const ran = await topAcrossRecycling('reader')
    // The interval under way started in a segment no longer there when top read it.
    expect(ran.gone).toBe(true)
    expect(ran.code).not.toBe(0)
    // The first interval only: nothing of the one whose WAL was lost, and no totals.
    const lines = ran.stdout.trim().split('\n')
    expect(lines).toHaveLength(1)
    const first = JSON.parse(lines[0]!) as WalObservation
    expect(first.attribution).toBe('wal')
    expect(ran.stderr).toContain('WAL_UNREADABLE')
    expect(ran.stderr).toContain('a WAL segment was removed before walcost read it')
    expect(ran.stderr).toContain('ALTER ROLE the_role REPLICATION')
    expect(ran.stderr).toContain('wal_keep_size')
    // The reading role made no slot: the server holds none afterwards either.
    expect((await admin.query('select slot_name from pg_replication_slots')).rows).toEqual([])
  })

  it('reads on where the role may make a replication slot: the slot keeps the segment through the same checkpoints', async () => {
    const ran = await topAcrossRecycling('replicator')
    expect(ran.gone).toBe(false)
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    const intervals = ran.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as WalObservation)
    expect(intervals.length).toBeGreaterThanOrEqual(2)
    for (const [i, interval] of intervals.entries()) {
      expect(interval.attribution).toBe('wal')
      const parts = [...interval.relations!, ...interval.unattributed!]
      expect(parts.reduce((sum, part) => sum + part.bytes, 0)).toBe(interval.window.bytes)
      if (i > 0) expect(interval.window.startLsn).toBe(intervals[i - 1]!.window.endLsn)
    }
    // The held interval took the switches' padding and the checkpoints.
    const kinds = intervals[1]!.unattributed!.map((part) => part.kind)
    expect(kinds).toContain('checkpoints')
    expect(intervals[1]!.relations!.find((relation) => relation.name === 'events')!.records).toBeGreaterThan(1000)
    expect((await admin.query('select slot_name from pg_replication_slots')).rows).toEqual([])
  })
})
