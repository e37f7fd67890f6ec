import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { WalObservation } from '../../src/index.js'
import { openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { expectAgreesWithWalinspect, named } from '../support/block-info.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname

// Debian's pgbench (postgresql-contrib, which .ci/run installs with Debian's PostgreSQL) as a real
// committed workload from four connections, observed by the built CLI on a PostgreSQL 18 of its own.
describe('walcost observe around pgbench on PostgreSQL 18', () => {
  let server: RunningServer
  let test: TestDatabase
  beforeAll(async () => {
    server = await startPostgres()
    test = await openPostgresDatabase(server.url)
  })
  afterAll(async () => {
    await test?.close()
    await server?.stop()
  })

  it('names its tables and primary key, as pg_walinspect reads the same window', async () => {
    await run('pgbench', ['-i', '-q', test.url as string])
    const { stdout } = await run(
      process.execPath,
      [
        cli,
        'observe',
        '--url',
        test.url as string,
        '--json',
        '--',
        'pgbench',
        '-c',
        '4',
        '-T',
        '10',
        test.url as string,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    )
    const observation = JSON.parse(stdout) as WalObservation
    expect(observation.attribution).toBe('wal')
    await expectAgreesWithWalinspect(test, observation)
    for (const name of [
      'pgbench_accounts',
      'pgbench_accounts_pkey',
      'pgbench_tellers',
      'pgbench_branches',
      'pgbench_history',
    ]) {
      const relation = named(observation, name)
      expect(relation?.records, name).toBeGreaterThan(100)
      expect(relation?.database).toBe(test.url?.split('/').at(-1))
    }
    expect(named(observation, 'pgbench_accounts_pkey')?.table).toBe('public.pgbench_accounts')
    expect(observation.transactions?.committed).toBeGreaterThan(100)
    expect(observation.window.durationMs).toBeGreaterThanOrEqual(10_000)
  })
})
