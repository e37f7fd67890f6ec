import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inspectWal, type WalObservation } from '../../src/index.js'
import { recordDebianWal } from '../support/debian.js'
import type { RunningServer } from '../support/postgres-server.js'
import { byFileOf, typesOf, waldumpByFile, waldumpTypes } from '../support/waldump.js'

// WAL that Debian's PostgreSQL and pgbench wrote, read offline, against Debian's pg_waldump on the
// same files: record types and totals as --stats=record counts them, and each relation's bytes as
// its per-record output (-b) adds up by relfilenode.
describe("inspectWal against Debian's pg_waldump on the same files", () => {
  let server: RunningServer
  let binDir: string
  let folder: string
  let first: string
  let last: string
  let inspected: WalObservation<'files'>
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'walcost-waldump-'))
    ;({ server, binDir, first, last } = await recordDebianWal(join(folder, 'wal'), { scale: 5, seconds: 5 }))
    inspected = await inspectWal({ dir: join(folder, 'wal'), db: server.url, parallel: 1 })
  }, 300_000)
  afterAll(async () => {
    await server?.stop()
    await rm(folder, { recursive: true, force: true })
  })

  it('counts every record type as --stats=record does', async () => {
    const { types, total } = await waldumpTypes(binDir, join(folder, 'wal'), first, last)
    expect(types.size).toBeGreaterThan(15)
    expect(Object.fromEntries(typesOf(inspected))).toEqual(Object.fromEntries(types))
    expect(total).toEqual([inspected.window.records, [...types.values()].reduce((sum, type) => sum + type.bytes, 0)])
    expect(inspected.files.major).toBeGreaterThanOrEqual(15)
    expect(inspected.relations!.find((relation) => relation.name === 'pgbench_accounts')?.kind).toBe('table')
    expect(inspected.relations!.map((relation) => relation.name)).toContain('tagged_tags')
    expect(inspected.relations!.find((relation) => relation.name === 'tagged_tags')?.table).toBe('public.tagged')
    expect(inspected.transactions!.aborted).toBeGreaterThanOrEqual(1)
  })

  it('gives the same in one thread as in stretches read by worker threads', async () => {
    for (const parallel of [2, 4, 7])
      expect(await inspectWal({ dir: join(folder, 'wal'), db: server.url, parallel })).toEqual(inspected)
  })

  it("gives each relation the bytes and records of pg_waldump's records summed by relfilenode", async () => {
    const byFile = await waldumpByFile(binDir, join(folder, 'wal'), first, last)
    const ours = byFileOf(inspected)
    expect(Object.fromEntries(ours)).toEqual(Object.fromEntries(byFile))
  })
})
