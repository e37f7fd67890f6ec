import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { observeWal, WalcostError } from '../../src/index.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { expectAgreesWithWalinspect, named } from '../support/block-info.js'
import { insertItems, MIXED_SETUP, mixedWorkload } from '../support/mixed-workload.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname

describeOnPostgres('observeWal on PostgreSQL 18', () => {
  let test: TestDatabase
  let databaseOid: number
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(MIXED_SETUP)
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
      // No pg_stat_statements in this database: no WAL by statement, and the note says how to get it.
      expect(observation.statements).toBeNull()
      expect(observation.attributionNote).toContain('CREATE EXTENSION pg_stat_statements')
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

  /** walcost observe --json as a process of its own, and its output once it has ended. */
  const observing = (args: string[]) => {
    const child = spawn(process.execPath, [cli, 'observe', '--url', test.url!, '--json', ...args])
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const ended = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
      child.once('exit', (code) => resolve({ code, stdout, stderr })),
    )
    const printed = async (text: string) => {
      for (let waited = 0; !stderr.includes(text); waited += 50) {
        if (waited > 60_000) throw new Error(`walcost observe never printed ${text}: ${stderr}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    return { child, ended, printed }
  }

  it('on SIGINT passes it to the command, waits for it, prints the window so far as partial, and exits with its status', async () => {
    // The command says its pid once it runs, and leaves with its own status on SIGINT.
    const script = `echo "started $$"; trap 'exit 7' INT; while :; do sleep 0.1; done`
    const observe = observing(['--', 'sh', '-c', script])
    await observe.printed('started ')
    await test.exec(insertItems(60_000, 400))
    observe.child.kill('SIGINT')
    const { code, stdout, stderr } = await observe.ended
    expect(code, stderr).toBe(7)
    const commandPid = Number(/started (\d+)/.exec(stderr)![1])
    expect(() => process.kill(commandPid, 0)).toThrow(/ESRCH/)
    const observation = JSON.parse(stdout)
    expect(observation.partial).toBe(true)
    expect(observation.notes[0]).toMatch(/^The window was ended early, after [\d.]+ s/)
    expect(named(observation, 'items')!.records).toBeGreaterThanOrEqual(400)
  })

  it('on SIGTERM ends a --seconds window where it is and prints it as partial', async () => {
    const observe = observing(['--seconds', '600'])
    // Rows keep coming while the window opens (both of walcost's sessions connected, then a few
    // quick reads), so that some land inside it however long it takes to open.
    const walcostSessions = async () =>
      Number(
        (
          await test.query<{ n: string }>(
            `select count(*)::text as n from pg_stat_activity where application_name = 'walcost'`,
          )
        )[0]!.n,
      )
    let batch = 0
    for (let waited = 0; (await walcostSessions()) < 2 || waited < 2_000; waited += 250) {
      await test.exec(insertItems(70_000 + 100 * batch++, 100))
      await new Promise((resolve) => setTimeout(resolve, 250))
      if (waited > 60_000) throw new Error('walcost observe never connected')
    }
    observe.child.kill('SIGTERM')
    const { code, stdout, stderr } = await observe.ended
    expect(code, stderr).toBe(143)
    const observation = JSON.parse(stdout)
    expect(observation.partial).toBe(true)
    expect(observation.window.durationMs).toBeLessThan(600_000)
    expect(named(observation, 'items')!.records).toBeGreaterThanOrEqual(100)
  })
})

describe.each(backends.filter((backend) => backend.name === 'pglite'))('observeWal on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(MIXED_SETUP)
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
