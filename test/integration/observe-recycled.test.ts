import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { observeWal, WalcostError, type WalObservation } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import { expectAgreesWithWalinspect } from '../support/block-info.js'
import {
  type Ran,
  type RecyclingServer,
  ROWS_PER_RECYCLING_ROUND,
  recycleCurrentSegment,
  startRecyclingServer,
  walcostHeld,
} from '../support/recycling.js'

/** Marks where the command walcost observes has started: the window is open. */
const WINDOW_OPEN = 'window open'
/** A command that says the window is open and runs until its stdin (walcost's) closes. */
const waitingCommand = [
  process.execPath,
  '-e',
  `console.log(${JSON.stringify(WINDOW_OPEN)}); process.stdin.resume(); process.stdin.on('end', () => process.exit(0))`,
]

describeOnPostgres('observeWal when a checkpoint recycles a segment the window still needs', () => {
  let recycling: RecyclingServer
  beforeAll(async () => {
    recycling = await startRecyclingServer()
    await recycling.admin.query('create extension pg_walinspect')
  })
  afterAll(async () => {
    await recycling?.stop()
  })
  const slots = async () => (await recycling.admin.query('select slot_name from pg_replication_slots')).rows
  const admin = {
    query: async <Row extends Record<string, unknown>>(sql: string, params?: unknown[]) =>
      (await recycling.admin.query<Row>(sql, params)).rows,
  }

  /**
   * observeWal on a connected Client of `role`: with no second session to follow the window, its
   * WAL is read once `run` has ended, and `run` recycles the segment the window starts in.
   */
  const observeAfterRecycling = async (role: 'reader' | 'replicator') => {
    const client = new pg.Client({ connectionString: recycling.roleUrl(role) })
    await client.connect()
    let gone = false
    try {
      const observing = observeWal({
        db: client,
        run: async () => {
          gone = await recycleCurrentSegment(recycling.admin)
        },
      })
      return {
        outcome: await observing.then(
          (observation) => ({ observation }),
          (error: unknown) => ({ error }),
        ),
        gone,
      }
    } finally {
      await client.end()
    }
  }

  /** `events` took every row the recycling inserted, one insert record each (INSERT+INIT on a new page). */
  const expectEventsInserted = (observation: WalObservation) => {
    const events = observation.relations!.find((relation) => relation.name === 'events')!
    const inserts = events.recordTypes.filter((type) => type.type === 'Heap/INSERT' || type.type === 'Heap/INSERT+INIT')
    expect(inserts.reduce((sum, type) => sum + type.records, 0)).toBe(2 * ROWS_PER_RECYCLING_ROUND)
    expect(observation.unattributed!.map((part) => part.kind)).toContain('checkpoints')
  }

  it('read after the window: fails with WAL_UNREADABLE saying which grant or setting keeps the WAL, and leaves no slot', async () => {
    const { outcome, gone } = await observeAfterRecycling('reader')
    expect(gone).toBe(true)
    expect('error' in outcome).toBe(true)
    const error = (outcome as { error: unknown }).error
    expect(error).toBeInstanceOf(WalcostError)
    expect((error as WalcostError).code).toBe('WAL_UNREADABLE')
    expect((error as WalcostError).message).toContain('a WAL segment was removed before walcost read it')
    expect((error as WalcostError).message).toContain('ALTER ROLE the_role REPLICATION')
    expect((error as WalcostError).message).toContain('wal_keep_size')
    expect(await slots()).toEqual([])
  })

  it('read after the window: reads on where the role may make a slot, as pg_walinspect reads the same window', async () => {
    const { outcome, gone } = await observeAfterRecycling('replicator')
    expect(gone).toBe(false)
    expect('observation' in outcome).toBe(true)
    const { observation } = outcome as { observation: WalObservation }
    expect(observation.attribution).toBe('wal')
    expectEventsInserted(observation)
    // The slot is gone, but no checkpoint has run since: the window's WAL is still there to compare.
    await expectAgreesWithWalinspect(admin, observation)
    expect(await slots()).toEqual([])
  })

  /**
   * `walcost observe --json` as `role` around a command that waits, held once the command has
   * started (its second session follows the window from then on) while the segment being written
   * is recycled; then the command ends and the window closes.
   */
  const observeHeldWhileRecycling = async (role: 'reader' | 'replicator'): Promise<Ran & { gone: boolean }> => {
    let gone = false
    const ran = await walcostHeld(
      ['observe', '--url', recycling.roleUrl(role), '--json', '--', ...waitingCommand],
      ({ stderr }) => stderr.includes(WINDOW_OPEN),
      async () => {
        gone = await recycleCurrentSegment(recycling.admin)
      },
    )
    return { ...ran, gone }
  }

  /** What a failed observe printed: the error with what to do, and no observation. */
  const expectUnreadable = (ran: Ran & { gone: boolean }) => {
    expect(ran.gone).toBe(true)
    expect(ran.code).not.toBe(0)
    expect(ran.stdout).toBe('')
    expect(ran.stderr).toContain('WAL_UNREADABLE')
    expect(ran.stderr).toContain('a WAL segment was removed before walcost read it')
    expect(ran.stderr).toContain('ALTER ROLE the_role REPLICATION')
  }

  it('followed while it runs: fails with WAL_UNREADABLE and prints no observation', async () => {
    expectUnreadable(await observeHeldWhileRecycling('reader'))
    expect(await slots()).toEqual([])
  })

  it('an hour long (--seconds 3600): fails as soon as its reading has, not an hour later', async () => {
    let gone = false
    const ran = await walcostHeld(
      ['observe', '--url', recycling.roleUrl('reader'), '--json', '--seconds', '3600'],
      // The window is open once its second session looks at how far the server has written.
      async () =>
        (
          await recycling.admin.query(
            `select from pg_stat_activity where usename = 'reader' and application_name = 'walcost'
               and query like '%pg_current_wal_lsn() - %' and query not like '%window end%'`,
          )
        ).rows.length > 0,
      async () => {
        gone = await recycleCurrentSegment(recycling.admin)
      },
    )
    // Without ending early, the test would time out long before the hour.
    expectUnreadable({ ...ran, gone })
    expect(await slots()).toEqual([])
  })

  it('followed while it runs: the slot of its second session keeps the segment, and the window reads whole', async () => {
    const ran = await observeHeldWhileRecycling('replicator')
    expect(ran.gone).toBe(false)
    expect(ran.code).toBe(0)
    const observation = JSON.parse(ran.stdout) as WalObservation
    expect(observation.attribution).toBe('wal')
    expectEventsInserted(observation)
    await expectAgreesWithWalinspect(admin, observation)
    expect(await slots()).toEqual([])
  })
})
