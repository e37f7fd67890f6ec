import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import * as zlib from 'node:zlib'
import { compressFrameSync } from 'lz4-napi'
import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { formatLsn, parseLsn } from '../../src/decode/reader.js'
import { inspectWal, WalcostError, type WalObservation } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const run = promisify(execFile)
const cli = new URL('../../dist/cli.js', import.meta.url).pathname
const SEGMENT = 16 * 1024 * 1024
const zstdCompress = (zlib as unknown as { zstdCompressSync?: (bytes: Buffer) => Buffer }).zstdCompressSync

/** What two readings of the same WAL share, whatever the files' names and codecs. */
const totals = (observation: WalObservation<'files'>) => ({
  window: observation.window,
  relations: observation.relations,
  unattributed: observation.unattributed,
  transactions: observation.transactions,
  fpiReasons: observation.fpiReasons,
  read: observation.files.read,
  gaps: observation.files.gaps,
  bad: observation.files.bad,
})

const segmentNumber = (name: string) =>
  Number.parseInt(name.slice(8, 16), 16) * 256 + Number.parseInt(name.slice(16, 24), 16)

// One workload's WAL, from an embedded PostgreSQL 18 of its own (wal_recycle off, so that the
// segments it makes ahead are zero-filled, as wal_init_zero leaves them), kept as pgBackRest,
// barman and WAL-G keep archives, and as copies of pg_wal that a DBA takes while it runs.
describeOnPostgres('inspectWal on archives as the tools keep them, and on copies of pg_wal', () => {
  let server: RunningServer
  let folder: string
  let client: pg.Client
  /** The whole segments up to the switch, as names. */
  let archived: string[]
  let plain: WalObservation<'files'>
  let switchLsn: string
  let checkpointLsn: string
  const sql = async <Row extends pg.QueryResultRow>(text: string) => (await client.query<Row>(text)).rows
  const insertLsn = async () => (await sql<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn'))[0]!.lsn
  const copyOfPgWal = async (name: string) => {
    await cp(join(server.dataDir, 'pg_wal'), join(folder, name), { recursive: true })
    return join(folder, name)
  }
  const put = async (path: string, bytes: Uint8Array) => {
    await mkdir(join(path, '..'), { recursive: true })
    await writeFile(path, bytes)
  }
  const segmentBytes = (name: string) => readFile(join(folder, 'plain', name))
  beforeAll(async () => {
    server = await startPostgres([
      '-c',
      'wal_recycle=off',
      '-c',
      'wal_keep_size=1GB',
      '-c',
      'max_wal_size=1GB',
      '-c',
      'checkpoint_timeout=1h',
    ])
    client = new pg.Client(server.url)
    await client.connect()
    folder = await mkdtemp(join(tmpdir(), 'walcost-archives-'))
    await sql('create table journal (id int8 primary key, at timestamptz default now(), body text)')
    await sql(`insert into journal (id, body) select i, repeat(md5(i::text), 4) from generate_series(1, 250000) i`)
    await sql('update journal set body = upper(body) where id % 7 = 0')
    // WAL up to the last quarter of a segment, and a checkpoint, which creates the next one ahead.
    for (let i = 0; ; i++) {
      const lsn = parseLsn(await insertLsn())
      if (lsn % SEGMENT >= 0.8 * SEGMENT && lsn % SEGMENT < 0.97 * SEGMENT) break
      await sql(
        `insert into journal (id, body) select i, md5(i::text) from generate_series(${300000 + i * 2000}, ${301999 + i * 2000}) i`,
      )
    }
    await sql('checkpoint')
    checkpointLsn = await insertLsn()
    await copyOfPgWal('checkpointed')
    // Then a switch: the segment made ahead is the next one, still zeros.
    switchLsn = (await sql<{ lsn: string }>('select pg_switch_wal()::text as lsn'))[0]!.lsn
    const switched = await copyOfPgWal('switched')
    const last = (await sql<{ name: string }>(`select pg_walfile_name('${switchLsn}'::pg_lsn - 1) as name`))[0]!.name
    archived = (await readdir(switched)).filter((name) => /^[0-9A-F]{24}$/.test(name) && name <= last).sort()
    await mkdir(join(folder, 'plain'))
    for (const name of archived) await cp(join(switched, name), join(folder, 'plain', name))
    plain = await inspectWal({ dir: join(folder, 'plain') })
  }, 300_000)
  afterAll(async () => {
    await client?.end()
    await server?.stop()
    await rm(folder, { recursive: true, force: true })
  })

  it('reads a pgBackRest repository from its top folder: checksummed names in a folder per 4 GB, gz, lz4 and zst', async () => {
    expect(archived.length).toBeGreaterThanOrEqual(3)
    expect(plain.files.endOfWal).toBeNull()
    expect(plain.window.records).toBeGreaterThan(100_000)
    const repo = join(folder, 'pgbackrest')
    const archive = join(repo, 'archive', 'main', '18-1')
    const codecs: Array<[string, (bytes: Buffer) => Buffer]> = [
      ['gz', (bytes) => zlib.gzipSync(bytes, { level: 1 })],
      ['lz4', (bytes) => compressFrameSync(bytes)],
      ...(zstdCompress ? [['zst', zstdCompress] as [string, (bytes: Buffer) => Buffer]] : []),
    ]
    for (const [i, name] of archived.entries()) {
      const bytes = await segmentBytes(name)
      const [extension, compress] = codecs[i % codecs.length]!
      const sha1 = createHash('sha1').update(bytes).digest('hex')
      await put(join(archive, name.slice(0, 16), `${name}-${sha1}.${extension}`), compress(bytes))
    }
    await put(join(repo, 'archive', 'main', 'archive.info'), Buffer.from('[db]\ndb-id=1\n'))
    await put(join(repo, 'archive', 'main', 'archive.info.copy'), Buffer.from('[db]\ndb-id=1\n'))
    await put(join(archive, archived[0]!.slice(0, 16), `${archived[0]}.00000028.backup`), Buffer.from('START WAL'))
    await put(join(repo, 'backup', 'main', 'backup.info'), Buffer.from('[backup:current]\n'))
    const read = await inspectWal({ dir: repo })
    expect(totals(read)).toEqual(totals(plain))
    expect(read.files.skipped).toEqual([])
  })

  it("reads barman's wals/ (gzip data under plain names, xlog.db beside) and WAL-G's brotli, by the magic number or the extension", async () => {
    const barman = join(folder, 'barman', 'main')
    for (const name of archived)
      await put(join(barman, 'wals', name.slice(0, 16), name), zlib.gzipSync(await segmentBytes(name)))
    await put(join(barman, 'wals', 'xlog.db'), Buffer.from(`${archived[0]}\t16777216\t0\tgzip\n`))
    expect(totals(await inspectWal({ dir: join(folder, 'barman') }))).toEqual(totals(plain))
    const walg = join(folder, 'wal-g')
    for (const name of archived)
      await put(
        join(walg, 'wal_005', `${name}.br`),
        zlib.brotliCompressSync(await segmentBytes(name), {
          params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 },
        }),
      )
    await put(join(walg, 'basebackups_005', `base_${archived[0]}_backup_stop_sentinel.json`), Buffer.from('{}'))
    expect(totals(await inspectWal({ files: [walg] }))).toEqual(totals(plain))
  })

  it('names each file it cannot decode or read, and with skipBad lists them in the text and counts them in the totals', async () => {
    expect(archived.length).toBeGreaterThanOrEqual(3)
    const mixed = join(folder, 'mixed')
    const [first, second, ...rest] = archived as [string, string, ...string[]]
    const third = rest[0]!
    // Cut short: half a gzip file. Damaged: gzip data under a plain name, a byte of it flipped. And
    // a segment compressed as walcost does not decode.
    const gzipped = zlib.gzipSync(await segmentBytes(first))
    await put(join(mixed, `${first}.gz`), gzipped.subarray(0, gzipped.length >> 1))
    const damaged = zlib.gzipSync(await segmentBytes(second))
    damaged[damaged.length >> 1]! ^= 0xff
    await put(join(mixed, second), damaged)
    await put(join(mixed, `${third}.xz`), Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 0, 0]))
    for (const name of rest.slice(1)) await put(join(mixed, `${name}.gz`), zlib.gzipSync(await segmentBytes(name)))

    const refused = await inspectWal({ dir: mixed }).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(WalcostError)
    expect((refused as WalcostError).code).toBe('WAL_UNREADABLE')
    expect((refused as WalcostError).file).toBe(`${third}.xz`)
    expect((refused as Error).message).toContain('which is no compression walcost decodes')

    const skipped = await inspectWal({ dir: mixed, skipBad: true })
    const reasons = Object.fromEntries(skipped.files.bad.map((file) => [file.name, file.reason]))
    expect(Object.keys(reasons).sort()).toEqual([`${first}.gz`, second, `${third}.xz`].sort())
    expect(reasons[`${first}.gz`]).toBe('it holds gzip data cut short (the file ends inside the compressed data)')
    expect(reasons[second]).toMatch(/^it holds gzip data under a plain segment name that does not decompress \(/)
    for (const file of skipped.files.bad) expect(file.lsn).toBeNull()
    // What is left is the WAL from the fourth segment on, as the plain files hold it.
    const after = await inspectWal({
      files: rest.slice(1).map((name) => join(folder, 'plain', name)),
    })
    expect(skipped.window).toEqual(after.window)
    expect(skipped.relations).toEqual(after.relations)

    const failed = await run(process.execPath, [cli, 'inspect', mixed]).catch(
      (error: { code: number; stderr: string }) => error,
    )
    expect((failed as { code: number }).code).toBe(2)
    expect(failed.stderr).toContain(`WAL_UNREADABLE: ${third}.xz: it is named as a WAL segment`)
    expect(failed.stderr).not.toContain('0/0')
    const { stdout } = await run(process.execPath, [cli, 'inspect', mixed, '--skip-bad'], { maxBuffer: 1 << 26 })
    expect(stdout.split('\n')[0]).toContain('3 files left out as unreadable')
    for (const name of [`${first}.gz`, second, `${third}.xz`]) expect(stdout).toContain(`${name} was left out`)
    expect(stdout).not.toContain('--skip-bad')
    expect(stdout).not.toContain('skipBad: true')
  })

  it('reads a copy of pg_wal taken right after pg_switch_wal() to the end of the WAL, the zero-filled segment after it unopened past --to', async () => {
    const copy = join(folder, 'switched')
    const next = segmentNumber(archived.at(-1)!) + 1
    const ahead = (await readdir(copy)).find((name) => name.length === 24 && segmentNumber(name) === next)!
    expect((await readFile(join(copy, ahead))).every((byte) => byte === 0)).toBe(true)
    const read = await inspectWal({ dir: copy })
    // The archived segments' WAL, to the end of the one the switch ended; the WAL ends at the next.
    expect(totals(read)).toEqual(totals(plain))
    expect(read.files.endOfWal).toEqual({ lsn: formatLsn(next * SEGMENT), file: ahead })
    expect(read.notes.join(' ')).toContain(`The WAL ends at ${formatLsn(next * SEGMENT)} in ${ahead}`)
    expect(read.files.skipped.map((file) => file.name)).toContain(ahead)
    // As in the issue: --from/--to as a live window gave them, and the segment ahead not opened at all.
    await writeFile(join(copy, ahead), Buffer.alloc(8192, 7))
    expect(((await inspectWal({ dir: copy }).catch((error: unknown) => error)) as WalcostError).file).toBe(ahead)
    const range = { from: plain.window.startLsn, to: switchLsn }
    const { stdout } = await run(
      process.execPath,
      [cli, 'inspect', copy, '--from', range.from, '--to', range.to, '--json'],
      {
        maxBuffer: 1 << 26,
      },
    )
    const within = JSON.parse(stdout) as WalObservation<'files'>
    expect(within.window).toEqual(plain.window)
    expect(within.relations).toEqual(plain.relations)
  })

  it('reads a copy of pg_wal taken after a checkpoint made a zero-filled segment ahead, and opens no file past --to', async () => {
    const copy = join(folder, 'checkpointed')
    const names = (await readdir(copy)).filter((name) => /^[0-9A-F]{24}$/.test(name)).sort()
    const zeroed: string[] = []
    for (const name of names) if ((await readFile(join(copy, name))).every((byte) => byte === 0)) zeroed.push(name)
    const current = segmentNumber(
      names.find((name) => segmentNumber(name) === Math.floor(parseLsn(checkpointLsn) / SEGMENT))!,
    )
    expect(zeroed.map(segmentNumber)).toContain(current + 1)
    const read = await inspectWal({ dir: copy })
    expect(read.files.bad).toEqual([])
    expect(read.files.endOfWal?.file).toBe(names.find((name) => segmentNumber(name) === current))
    expect(parseLsn(read.files.endOfWal!.lsn)).toBeGreaterThanOrEqual(parseLsn(checkpointLsn))
    expect(read.files.skipped.filter((file) => file.reason.startsWith('zero-filled')).map((file) => file.name)).toEqual(
      zeroed.filter((name) => segmentNumber(name) > current),
    )
    // The segment ahead made unreadable: read only where --to asks for it, so --to before it reads.
    const ahead = names.find((name) => segmentNumber(name) === current + 1)!
    await writeFile(join(copy, ahead), Buffer.alloc(8192, 7))
    const failure = await inspectWal({ dir: copy }).catch((error: unknown) => error)
    expect((failure as WalcostError).file).toBe(ahead)
    const before = await inspectWal({ dir: copy, to: read.files.endOfWal!.lsn })
    expect(before.window).toEqual({ ...read.window })
    expect(before.relations).toEqual(read.relations)
  })
})
