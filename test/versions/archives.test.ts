import { execFile } from 'node:child_process'
import { chmod, chown, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inspectWal } from '../../src/index.js'
import { recordDebianWal } from '../support/debian.js'
import type { RunningServer } from '../support/postgres-server.js'
import { byFileOf, typesOf, waldumpByFile, waldumpTypes } from '../support/waldump.js'

const run = promisify(execFile)
/** pgBackRest's compress-type values, each with the Debian command that decompresses it. */
const PGBACKREST_CODECS = { gz: 'gzip', lz4: 'lz4', zst: 'zstd', bz2: 'bzip2' } as const
const SEGMENT_NAME = /^[0-9A-F]{24}/

/** Every file below `folder`. */
async function filesBelow(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { withFileTypes: true, recursive: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
}

// A pgbench workload on Debian's PostgreSQL, archived as it runs by Debian's pgBackRest (a
// repository for each compress-type) and barman (gzip, from its incoming folder by archive-wal),
// each read by inspectWal from its repository's top folder, against Debian's pg_waldump on the
// same segments decompressed by Debian's own gzip, lz4, zstd and bzip2.
describe("inspectWal on Debian's pgBackRest and barman repositories, against pg_waldump", () => {
  let server: RunningServer
  let binDir: string
  let folder: string
  const user = { uid: -1, gid: -1 }
  const asPostgres = (command: string, args: string[]) =>
    process.getuid?.() === 0 ? run('runuser', ['-u', 'postgres', '--', command, ...args]) : run(command, args)
  const config = (codec: string) => join(folder, `pgbackrest-${codec}.conf`)
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'walcost-archives-'))
    // The server runs as postgres (as root, the tests' server user): its archive_command writes here.
    await chmod(folder, 0o755)
    let last = ''
    ;({ server, binDir, last } = await recordDebianWal(join(folder, 'copied'), {
      scale: 5,
      seconds: 5,
      flags: ['-c', 'archive_mode=on'],
      prepare: async (started) => {
        if (process.getuid?.() === 0) {
          user.uid = Number((await run('id', ['-u', 'postgres'])).stdout)
          user.gid = Number((await run('id', ['-g', 'postgres'])).stdout)
        }
        const port = new URL(started.url).port
        const commands: string[] = []
        for (const codec of Object.keys(PGBACKREST_CODECS)) {
          for (const name of [`repo-${codec}`, `lock-${codec}`, 'log'])
            await mkdir(join(folder, name), { recursive: true })
          await writeFile(
            config(codec),
            [
              '[global]',
              `repo1-path=${join(folder, `repo-${codec}`)}`,
              `lock-path=${join(folder, `lock-${codec}`)}`,
              `log-path=${join(folder, 'log')}`,
              'log-level-console=error',
              'log-level-file=off',
              `compress-type=${codec}`,
              '[main]',
              `pg1-path=${started.dataDir}`,
              `pg1-port=${port}`,
              '',
            ].join('\n'),
          )
          commands.push(`pgbackrest --config=${config(codec)} --stanza=main archive-push %p`)
        }
        const incoming = join(folder, 'barman', 'main', 'incoming')
        await mkdir(incoming, { recursive: true })
        commands.push(`cp %p ${incoming}/%f`)
        if (user.uid >= 0)
          for (const path of await readdir(folder, { recursive: true }))
            await chown(join(folder, path), user.uid, user.gid)
        for (const codec of Object.keys(PGBACKREST_CODECS))
          await asPostgres('pgbackrest', [`--config=${config(codec)}`, '--stanza=main', '--no-online', 'stanza-create'])
        await writeFile(
          join(folder, 'barman.conf'),
          [
            '[barman]',
            `barman_user = ${process.getuid?.() === 0 ? 'root' : (await run('id', ['-un'])).stdout.trim()}`,
            `barman_home = ${join(folder, 'barman')}`,
            `log_file = ${join(folder, 'barman.log')}`,
            'compression = gzip',
            '[main]',
            'description = walcost',
            `conninfo = host=127.0.0.1 port=${port} user=postgres password=walcost dbname=postgres`,
            'backup_method = postgres',
            'archiver = on',
            '',
          ].join('\n'),
        )
        const client = new pg.Client(started.url)
        await client.connect()
        try {
          await client.query(`alter system set archive_command = '${commands.join(' && ')}'`)
          await client.query('select pg_reload_conf()')
        } finally {
          await client.end()
        }
      },
    }))
    // Every segment up to the switch archived, in a bounded wait: the last one the workload wrote,
    // not the one the insert position is in now (the background writer logs a standby snapshot
    // every 15 s, which can begin the next segment, archived only at its own switch).
    const client = new pg.Client(server.url)
    await client.connect()
    try {
      for (let waited = 0; ; waited += 500) {
        const { rows } = await client.query<{ last: string | null; failed: string; failure: string | null }>(
          'select last_archived_wal as last, failed_count::text as failed, last_failed_wal as failure from pg_stat_archiver',
        )
        const [state] = rows
        if (state?.failed !== '0') throw new Error(`archive_command failed on ${state?.failure}`)
        if (state.last !== null && state.last >= last.slice(0, 24)) break
        if (waited > 120_000) throw new Error(`archiving reached ${state.last}, not ${last}, in 120 s`)
        await new Promise((resolve) => setTimeout(resolve, 500))
      }
      // The repositories then hold still: a segment archived later (the server goes on writing)
      // would reach some of them and not others, or barman's incoming folder after archive-wal.
      // An empty archive_command pauses archiving; one under way when it is set ends first.
      await client.query(`alter system set archive_command = ''`)
      await client.query('select pg_reload_conf()')
      await new Promise((resolve) => setTimeout(resolve, 2_000))
    } finally {
      await client.end()
    }
    await run('barman', ['-c', join(folder, 'barman.conf'), 'archive-wal', 'main'])
  }, 600_000)
  afterAll(async () => {
    await server?.stop()
    await rm(folder, { recursive: true, force: true })
  })

  /** The repository's segments decompressed by Debian's command for `codec`, into a folder of their own. */
  const decompressed = async (repository: string, command: string) => {
    const into = join(folder, `${basename(repository)}-plain`)
    await mkdir(into, { recursive: true })
    const names: string[] = []
    for (const path of await filesBelow(repository)) {
      const name = basename(path).slice(0, 24)
      if (!SEGMENT_NAME.test(basename(path)) || basename(path).includes('.backup')) continue
      const { stdout } = await run(command, ['-dc', path], { encoding: 'buffer', maxBuffer: 1 << 26 })
      await writeFile(join(into, name), stdout)
      names.push(name)
    }
    names.sort()
    return { into, first: names[0]!, last: names.at(-1)!, count: names.length }
  }

  const expectAsWaldump = async (repository: string, command: string) => {
    const inspected = await inspectWal({ dir: repository, db: server.url })
    const plain = await decompressed(repository, command)
    expect(plain.count).toBeGreaterThan(3)
    expect(inspected.files.read).toBe(plain.count)
    expect(inspected.files.bad).toEqual([])
    expect(inspected.files.gaps).toEqual([])
    const { types, total } = await waldumpTypes(binDir, plain.into, plain.first, plain.last)
    expect(types.size).toBeGreaterThan(15)
    expect(Object.fromEntries(typesOf(inspected))).toEqual(Object.fromEntries(types))
    expect(total).toEqual([inspected.window.records, [...types.values()].reduce((sum, type) => sum + type.bytes, 0)])
    const byFile = await waldumpByFile(binDir, plain.into, plain.first, plain.last)
    expect(byFile.size).toBeGreaterThan(10)
    expect(Object.fromEntries(byFileOf(inspected))).toEqual(Object.fromEntries(byFile))
    expect(inspected.relations!.find((relation) => relation.name === 'pgbench_accounts')?.kind).toBe('table')
  }

  for (const [codec, command] of Object.entries(PGBACKREST_CODECS))
    it(`reads pgBackRest's repository with compress-type=${codec} as pg_waldump reads the segments decompressed`, async () => {
      const repository = join(folder, `repo-${codec}`)
      const files = (await filesBelow(repository)).map((path) => basename(path))
      expect(files).toContain('archive.info')
      expect(
        files.filter((name) => new RegExp(`^[0-9A-F]{24}-[0-9a-f]{40}\\.${codec}$`).test(name)).length,
      ).toBeGreaterThan(3)
      await expectAsWaldump(repository, command)
    }, 300_000)

  it("reads barman's repository (gzip under plain names in wals/, xlog.db) as pg_waldump reads the segments decompressed", async () => {
    const repository = join(folder, 'barman')
    const wals = (await filesBelow(join(repository, 'main', 'wals'))).map((path) => basename(path))
    expect(wals).toContain('xlog.db')
    expect(wals.filter((name) => /^[0-9A-F]{24}$/.test(name)).length).toBeGreaterThan(3)
    await expectAsWaldump(repository, 'gzip')
  }, 300_000)
})
