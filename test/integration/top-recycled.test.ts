import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { TopGap } from '../../src/cli/top-command.js'
import type { WalObservation } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import {
  type Ran,
  type RecyclingServer,
  recycleCurrentSegment,
  startRecyclingServer,
  walcostHeld,
} from '../support/recycling.js'

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

describeOnPostgres('walcost top when a checkpoint recycles a segment before it is read', () => {
  let recycling: RecyclingServer
  beforeAll(async () => {
    recycling = await startRecyclingServer()
  })
  afterAll(async () => {
    await recycling?.stop()
  })

  /**
   * `walcost top` as `role`, under a workload of its own, held after its first interval (read, so
   * the next one starts where it ended) while the segment its next interval starts in is recycled.
   * `gone`: that segment's file was no longer there when top went on.
   */
  const topAcrossRecycling = async (role: 'reader' | 'replicator'): Promise<Ran & { gone: boolean }> => {
    let gone = false
    let running = true
    const url = recycling.roleUrl(role)
    const writing = workload(url, () => !running)
    try {
      const ran = await walcostHeld(
        ['top', '--url', url, '--json', '--interval', '1', '--seconds', '4'],
        ({ stdout }) => stdout.includes('\n'),
        async () => {
          gone = await recycleCurrentSegment(recycling.admin)
        },
      )
      return { ...ran, gone }
    } finally {
      running = false
      await writing
    }
  }

  it('marks the WAL it lost as a gap, says which grant or setting keeps the WAL, and goes on from where the server is', async () => {
    const ran = await topAcrossRecycling('reader')
    // The interval under way started in a segment no longer there when top read it.
    expect(ran.gone).toBe(true)
    expect(ran.code, ran.stderr).toBe(0)
    const lines = ran.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as WalObservation | TopGap)
    // The first interval, then the gap where the lost WAL was, then intervals from the insert position on.
    const gapAt = lines.findIndex((line) => line.kind === 'wal-gap')
    expect(gapAt).toBe(1)
    const gap = lines[gapAt] as TopGap
    const first = lines[0] as WalObservation
    expect(first.attribution).toBe('wal')
    expect(gap.from).toBe(first.window.endLsn)
    expect(gap.missedBytes).toBeGreaterThan(0)
    expect(gap.reason).toContain('a WAL segment was removed before walcost read it')
    const after = lines.slice(gapAt + 1) as WalObservation[]
    expect(after.length).toBeGreaterThanOrEqual(1)
    expect(after[0]!.window.startLsn).toBe(gap.to)
    expect(ran.stderr).toContain('ALTER ROLE the_role REPLICATION')
    expect(ran.stderr).toContain('wal_keep_size')
    // The reading role made no slot: the server holds none afterwards either.
    expect((await recycling.admin.query('select slot_name from pg_replication_slots')).rows).toEqual([])
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
    expect((await recycling.admin.query('select slot_name from pg_replication_slots')).rows).toEqual([])
  })
})
