import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inspectWal, type WalObservation } from '../../src/index.js'
import { recordDebianWal } from '../support/debian.js'
import type { RunningServer } from '../support/postgres-server.js'

/** Every line pg_waldump prints for `args`, as it prints them. */
async function* waldumpLines(binDir: string, args: string[]): AsyncGenerator<string> {
  const child = spawn(join(binDir, 'pg_waldump'), args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve))
  yield* createInterface({ input: child.stdout })
  const code = await exited
  // pg_waldump ends with an error where the WAL runs out, after it printed everything before it.
  if (code !== 0 && !/invalid record length|could not find file/.test(stderr)) throw new Error(`pg_waldump: ${stderr}`)
}

/** Records and combined bytes by record type, from inspectWal's relations and the WAL of no relation. */
function typesOf(observation: WalObservation): Map<string, { records: number; bytes: number; fpiBytes: number }> {
  const types = new Map<string, { records: number; bytes: number; fpiBytes: number }>()
  for (const part of [...observation.relations!, ...observation.unattributed!]) {
    for (const type of part.recordTypes) {
      const sum = types.get(type.type) ?? { records: 0, bytes: 0, fpiBytes: 0 }
      sum.records += type.records
      sum.bytes += type.bytes
      sum.fpiBytes += type.fpiBytes
      types.set(type.type, sum)
    }
  }
  return types
}

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
    const types = new Map<string, { records: number; bytes: number; fpiBytes: number }>()
    let total: number[] = []
    for await (const line of waldumpLines(binDir, ['--stats=record', '-p', join(folder, 'wal'), first, last])) {
      const row = /^(\S+\/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)/.exec(
        line,
      )
      if (row) types.set(row[1]!, { records: Number(row[2]), bytes: Number(row[5]), fpiBytes: Number(row[4]) })
      const totals = /^Total\s+(\d+)\s+(\d+).*?(\d+)\s+\[[\d.]+%\]\s+(\d+)\s+\[/.exec(line)
      if (totals) total = [Number(totals[1]), Number(totals[4])]
    }
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
    const byFile = new Map<string, { records: number; bytes: number }>()
    const add = (key: string, records: number, bytes: number) => {
      const sum = byFile.get(key) ?? { records: 0, bytes: 0 }
      sum.records += records
      sum.bytes += bytes
      byFile.set(key, sum)
    }
    // A record's bytes without images go to its first block's file, each image to its own block's.
    let pending: number | null = null
    for await (const line of waldumpLines(binDir, ['-b', '-p', join(folder, 'wal'), first, last])) {
      const record = /^rmgr: .*len \(rec\/tot\):\s*(\d+)\/\s*(\d+)/.exec(line)
      if (record) {
        pending = Number(record[1])
        continue
      }
      const block = /^\s+blkref #\d+: rel (\d+)\/(\d+)\/(\d+) (?:fork \w+ )?blk \d+(.*)$/.exec(line)
      if (!block) continue
      const key = `${block[2]}/${block[3]}`
      if (pending !== null) {
        add(key, 1, pending)
        pending = null
      }
      const image = /\(FPW\); hole: offset: \d+, length: (\d+)(?:, compression saved: (\d+))?/.exec(block[4]!)
      if (image) add(key, 0, 8192 - Number(image[1]) - Number(image[2] ?? 0))
    }
    const ours = new Map<string, { records: number; bytes: number }>()
    for (const relation of inspected.relations!)
      for (const file of relation.files) {
        expect(relation.files).toHaveLength(1)
        ours.set(`${relation.databaseOid}/${file.relfilenode}`, { records: relation.records, bytes: relation.bytes })
      }
    expect(Object.fromEntries(ours)).toEqual(Object.fromEntries(byFile))
  })
})
