import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { parseLsn } from '../../src/decode/reader.js'
import { inspectWal, observeWal, WalcostError, type WalObservation } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { expectAgreesWithWalinspect } from '../support/block-info.js'
import { MIXED_SETUP, mixedWorkload } from '../support/mixed-workload.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** What two readings of the same WAL must share, relation by relation (by file, names aside). */
const byFile = (observation: WalObservation) =>
  Object.fromEntries(
    observation.relations!.flatMap((relation) =>
      relation.files.length === 1
        ? [
            [
              `${relation.databaseOid}/${relation.files[0]!.relfilenode}`,
              [relation.records, relation.bytes, relation.fpiCount],
            ],
          ]
        : [],
    ),
  )

describeOnPostgres('inspectWal on segment files copied from PostgreSQL 18', () => {
  let test: TestDatabase
  let observed: WalObservation<'server'>
  let folder: string
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(MIXED_SETUP)
    observed = await observeWal({ db: test.url!, run: () => mixedWorkload(test.url!) })
    folder = await mkdtemp(join(tmpdir(), 'walcost-inspect-'))
    // The segments that hold the window, copied as an archive would hold them (the newest is still
    // being written: its WAL ends inside it).
    const segments = await test.query<{ name: string; bytes: Buffer }>(
      `select name, pg_read_binary_file('pg_wal/' || name) as bytes from pg_ls_waldir()
        where name ~ '^[0-9A-F]{24}$' and name between pg_walfile_name($1) and pg_walfile_name($2) order by name`,
      [observed.window.startLsn, observed.window.endLsn],
    )
    await mkdir(join(folder, 'plain'))
    await mkdir(join(folder, 'gzip'))
    for (const segment of segments) {
      await writeFile(join(folder, 'plain', segment.name), segment.bytes)
      await writeFile(join(folder, 'gzip', `${segment.name}.gz`), gzipSync(segment.bytes))
    }
  }, 300_000)
  afterAll(async () => {
    await test.close()
    await rm(folder, { recursive: true, force: true })
  })

  it('gives the live window, relation by relation, from the files alone, as pg_walinspect reads them', async () => {
    const range = { from: observed.window.startLsn, to: observed.window.endLsn }
    const inspected = await inspectWal({ dir: join(folder, 'plain'), db: test.url!, ...range })
    expect(inspected.files.major).toBe(18)
    expect(inspected.server).toBeNull()
    expect(inspected.window.durationMs).toBeNull()
    for (const key of ['startLsn', 'endLsn', 'bytes', 'records', 'fpiCount'] as const)
      expect(inspected.window[key], key).toBe(observed.window[key])
    // Named by today's catalog: a file dropped since (a dropped table, a rewrite's old file) is unknown
    // today, where the live window named it from the catalog at its start.
    const [{ oid } = { oid: '' }] = await test.query<{ oid: string }>(
      'select oid::text from pg_database where datname = current_database()',
    )
    const ours = (observation: WalObservation) =>
      observation.relations!.filter((relation) => [Number(oid), 0].includes(relation.databaseOid))
    const kept = ours(observed).filter((relation) => relation.files.length === 1 && !relation.files[0]!.dropped)
    expect(kept.length).toBeGreaterThan(10)
    for (const relation of kept)
      expect(
        inspected.relations!.find(
          (entry) =>
            entry.databaseOid === relation.databaseOid &&
            entry.name === relation.name &&
            entry.schema === relation.schema,
        ),
        relation.name ?? '',
      ).toEqual(relation)
    const unknownToday = ours(inspected).filter((relation) => relation.name === null)
    expect(unknownToday.map((relation) => relation.files[0]!.relfilenode).sort()).toEqual(
      ours(observed)
        .flatMap((relation) => relation.files.filter((file) => file.dropped).map((file) => file.relfilenode))
        .sort(),
    )
    expect(inspected.notes.join(' ')).toContain('in no catalog today')
    expect(inspected.unattributed).toEqual(observed.unattributed)
    expect(inspected.transactions).toEqual(observed.transactions)
    expect(inspected.fpiReasons).toEqual(observed.fpiReasons)
    await expectAgreesWithWalinspect(test, inspected)

    const gzipped = await inspectWal({ files: [join(folder, 'gzip')], db: test.url!, ...range })
    expect({ ...gzipped, files: null, notes: null }).toEqual({ ...inspected, files: null, notes: null })
    expect(gzipped.notes).toEqual(inspected.notes.map((note) => note.replace(/(0{7}\w{17})/, '$1.gz')))

    // With no server, the same WAL by database and relfilenode, with the note that says how to name it.
    const unnamed = await inspectWal({ dir: join(folder, 'plain'), ...range })
    expect(unnamed.relations!.every((relation) => relation.name === null)).toBe(true)
    expect(byFile(unnamed)).toEqual(byFile(inspected))
    expect(unnamed.notes.join(' ')).toContain('give a server (--url, or db) to name them')
  })

  it('reads the whole folder to where the WAL ends, and the CLI prints it as JSON', async () => {
    const whole = await inspectWal({ dir: join(folder, 'plain'), parallel: 1 })
    // Stretches read by worker threads and joined give the same, whatever the split.
    for (const parallel of [2, 3]) expect(await inspectWal({ dir: join(folder, 'plain'), parallel })).toEqual(whole)
    expect(whole.files.endOfWal?.file).toBe((await readdir(join(folder, 'plain'))).sort().at(-1))
    expect(whole.window.bytes).toBeGreaterThan(observed.window.bytes)
    const sum =
      whole.relations!.reduce((total, relation) => total + relation.bytes, 0) +
      whole.unattributed!.reduce((total, part) => total + part.bytes, 0)
    expect(sum).toBe(whole.window.bytes)
    const { stdout } = await run(process.execPath, [cli, 'inspect', join(folder, 'gzip'), '--json'], {
      maxBuffer: 64 * 1024 * 1024,
    })
    const printed = JSON.parse(stdout) as WalObservation<'files'>
    expect(printed.window).toEqual(whole.window)
    expect(printed.relations).toEqual(whole.relations)
  })

  it('ends the WAL at a record whose next page the server had not written yet, as in a copy of pg_wal taken while it writes', async () => {
    const names = (await readdir(join(folder, 'plain'))).sort()
    const newest = names.at(-1)!
    const bytes = await readFile(join(folder, 'plain', newest))
    // The last page that continues a record from the page before (XLP_FIRST_IS_CONTRECORD), and is
    // this segment's own (not the zeros or older WAL after the insert position).
    const segmentStart = bytes.readUInt32LE(8) + bytes.readUInt32LE(12) * 2 ** 32
    let continued = -1
    for (let page = 8192; page < bytes.length; page += 8192) {
      const address = bytes.readUInt32LE(page + 8) + bytes.readUInt32LE(page + 12) * 2 ** 32
      if (address !== segmentStart + page) break
      if ((bytes.readUInt16LE(page + 2) & 0x0001) !== 0) continued = page
    }
    expect(continued).toBeGreaterThan(0)
    const cut = join(folder, 'cut')
    await mkdir(cut)
    for (const name of names.slice(0, -1)) await copyFile(join(folder, 'plain', name), join(cut, name))
    await writeFile(
      join(cut, newest),
      Buffer.concat([bytes.subarray(0, continued), Buffer.alloc(bytes.length - continued)]),
    )
    const read = await inspectWal({ dir: cut, parallel: 1 })
    expect(read.files.endOfWal?.file).toBe(newest)
    const before = await inspectWal({ dir: join(folder, 'plain'), to: read.files.endOfWal!.lsn, parallel: 1 })
    expect(read.window).toEqual(before.window)
    expect(read.relations).toEqual(before.relations)
    expect(read.unattributed).toEqual(before.unattributed)
    expect(read.transactions).toEqual(before.transactions)
  })

  it('refuses a damaged file with its name and LSN, or leaves it out with skipBad', async () => {
    const damaged = join(folder, 'damaged')
    await mkdir(damaged)
    const names = (await readdir(join(folder, 'plain'))).sort()
    for (const name of names) await writeFile(join(damaged, name), await readFile(join(folder, 'plain', name)))
    // A bit flipped in the xid of the window's first record.
    const start = parseLsn(observed.window.startLsn)
    const segmentSize = 16 * 1024 * 1024
    const victim = names.find((name) => Number.parseInt(name.slice(16), 16) === Math.floor(start / segmentSize) % 256)!
    const bytes = await readFile(join(damaged, victim))
    bytes[(start % segmentSize) + 4]! ^= 0x10
    await writeFile(join(damaged, victim), bytes)
    const failure = await inspectWal({ dir: damaged }).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(WalcostError)
    expect((failure as WalcostError).code).toBe('WAL_UNREADABLE')
    expect((failure as WalcostError).file).toBe(victim)
    expect((failure as WalcostError).lsn).toBe(observed.window.startLsn)
    expect((failure as Error).message).toContain(victim)
    if (names.length > 1) {
      const skipped = await inspectWal({ dir: damaged, skipBad: true })
      expect(skipped.files.bad.map((file) => file.name)).toEqual([victim])
      expect(skipped.notes.join(' ')).toContain(`${victim} was left out`)
    }
    const { stderr } = await run(process.execPath, [cli, 'inspect', damaged]).catch(
      (error: { stderr: string }) => error,
    )
    expect(stderr).toContain(`WAL_UNREADABLE: ${victim} at `)
    expect(stderr).toContain('--skip-bad')
  })
})

it('refuses what is not WAL, and a folder of mixed majors, naming the files', async () => {
  const folder = await mkdtemp(join(tmpdir(), 'walcost-inspect-'))
  try {
    await writeFile(join(folder, '000000010000000000000001'), Buffer.alloc(8192, 7))
    const notWal = await inspectWal({ dir: folder }).catch((error: unknown) => error)
    expect((notWal as WalcostError).code).toBe('WAL_UNREADABLE')
    expect((notWal as WalcostError).file).toBe('000000010000000000000001')
    const page = (magic: number, segment: number) => {
      const bytes = Buffer.alloc(40)
      bytes.writeUInt16LE(magic, 0)
      bytes.writeUInt16LE(0x0002, 2)
      bytes.writeUInt32LE(segment * 16 * 1024 * 1024, 8)
      bytes.writeUInt32LE(16 * 1024 * 1024, 32)
      bytes.writeUInt32LE(8192, 36)
      return bytes
    }
    await writeFile(join(folder, '000000010000000000000001'), page(0xd116, 1))
    await writeFile(join(folder, '000000010000000000000002'), page(0xd118, 2))
    const mixed = await inspectWal({ dir: folder }).catch((error: unknown) => error)
    expect((mixed as WalcostError).code).toBe('WAL_UNREADABLE')
    expect((mixed as WalcostError).file).toBe('000000010000000000000002')
    expect((mixed as WalcostError).lsn).toBe('0/2000000')
    expect((mixed as Error).message).toContain(
      "it is WAL of PostgreSQL 18, where 000000010000000000000001 and most files are PostgreSQL 17's",
    )
    const typo = await inspectWal({ dir: folder, skipbad: true } as never).catch((error: unknown) => error)
    expect((typo as Error).message).toContain('skipBad')
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
})

describe('inspectWal across a timeline switch, on a PostgreSQL 18 promoted from standby', () => {
  let server: RunningServer
  let folder: string
  let switchLsn: string
  const segmentsOf = async (timeline: string) =>
    (await readdir(join(folder, 'wal'))).filter((name) => name.startsWith(timeline) && name.length === 24).sort()
  beforeAll(async () => {
    server = await startPostgres()
    folder = await mkdtemp(join(tmpdir(), 'walcost-timelines-'))
    const sql = async (statements: string[]) => {
      const client = new pg.Client(server.url)
      await client.connect()
      try {
        for (const statement of statements) await client.query(statement)
      } finally {
        await client.end()
      }
    }
    await sql([
      'create table journal (id int8 primary key, body text)',
      `insert into journal select i, repeat('a', 200) from generate_series(1, 20000) i`,
    ])
    // A clean stop, then a start as a standby with no primary, promoted: timeline 2 begins.
    await server.restart({ 'standby.signal': '' })
    await sql([
      'select pg_promote(true, 120)',
      `insert into journal select i, repeat('b', 200) from generate_series(20001, 50000) i`,
      'select pg_switch_wal()',
    ])
    await mkdir(join(folder, 'wal'))
    for (const name of await readdir(join(server.dataDir, 'pg_wal')))
      if (/^[0-9A-F]{24}$|\.history$/.test(name))
        await copyFile(join(server.dataDir, 'pg_wal', name), join(folder, 'wal', name))
    const history = await readFile(join(folder, 'wal', '00000002.history'), 'utf8')
    switchLsn = /^1\s+([0-9A-F]+\/[0-9A-F]+)/m.exec(history)![1]!
  }, 300_000)
  afterAll(async () => {
    await server?.stop()
    await rm(folder, { recursive: true, force: true })
  })

  it("follows timeline 2's history: timeline 1's WAL up to the switch, then timeline 2's", async () => {
    const whole = await inspectWal({ dir: join(folder, 'wal'), db: server.url })
    expect(whole.files.timeline).toBe(2)
    expect(whole.files.switches).toEqual([{ parent: 1, switchLsn }])
    expect(whole.files.gaps).toEqual([])
    // Timeline 1's copy of the segment where it switched is not read: timeline 2's holds it.
    const switchSegment = (await segmentsOf('00000002'))[0]!.slice(8)
    expect(whole.files.skipped.map((file) => file.name)).toContain(`00000001${switchSegment}`)
    const timeline1 = (await segmentsOf('00000001')).map((name) => join(folder, 'wal', name))
    const timeline2 = (await segmentsOf('00000002')).map((name) => join(folder, 'wal', name))
    const before = await inspectWal({ files: timeline1, to: switchLsn })
    const after = await inspectWal({ files: timeline2, from: switchLsn })
    expect(whole.window.records).toBe(before.window.records! + after.window.records!)
    expect(whole.window.bytes).toBe(before.window.bytes + after.window.bytes)
    const journal = whole.relations!.find((relation) => relation.name === 'journal')!
    const bytesOf = (observation: WalObservation) =>
      observation
        .relations!.filter((relation) =>
          relation.files.some((file) => file.relfilenode === journal.files[0]!.relfilenode),
        )
        .reduce((sum, relation) => sum + relation.bytes, 0)
    expect(journal.bytes).toBe(bytesOf(before) + bytesOf(after))
    expect(journal.records).toBeGreaterThan(50_000)
  })

  it("reads timeline 1's last segment as a .partial where timeline 2's copy is missing, and says what is missing", async () => {
    const partial = join(folder, 'partial')
    await mkdir(partial)
    const timeline1 = await segmentsOf('00000001')
    const timeline2 = await segmentsOf('00000002')
    const switched = timeline2[0]!.slice(8)
    for (const name of timeline1)
      await copyFile(join(folder, 'wal', name), join(partial, name.endsWith(switched) ? `${name}.partial` : name))
    for (const name of timeline2.slice(1)) await copyFile(join(folder, 'wal', name), join(partial, name))
    await copyFile(join(folder, 'wal', '00000002.history'), join(partial, '00000002.history'))
    const read = await inspectWal({ dir: partial })
    expect(read.files.gaps).toHaveLength(1)
    expect(read.files.gaps[0]!.missing).toEqual([timeline2[0]])
    expect(read.notes.join(' ')).toContain(`(${timeline2[0]})`)
  })
})
