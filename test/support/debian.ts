import { execFile } from 'node:child_process'
import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { type RunningServer, startPostgres } from './postgres-server.js'

const run = promisify(execFile)

/**
 * Debian's PostgreSQL binaries (postgres, pg_waldump; pgbench is on PATH), which .ci/run installs
 * with apt-get install postgresql: the newest major under /usr/lib/postgresql.
 */
export async function debianBinDir(): Promise<string> {
  const majors = await readdir('/usr/lib/postgresql').catch(() => [] as string[])
  const newest = majors
    .map(Number)
    .filter(Number.isFinite)
    .sort((a, b) => b - a)[0]
  if (newest === undefined)
    throw new Error('no PostgreSQL under /usr/lib/postgresql: apt-get install postgresql (.ci/run does)')
  return `/usr/lib/postgresql/${newest}/bin`
}

/**
 * Real WAL from Debian's PostgreSQL and pgbench, copied out of pg_wal as an archive holds it:
 * pgbench's initialisation at `scale` and `seconds` of its TPC-B-like load from two connections,
 * then a rolled-back insert, a TRUNCATE and a GIN index, and a segment switch so that every
 * segment copied is whole. The server keeps running (for a catalog to name relations); stop it.
 * `flags` go to the server; `prepare` runs once it is up, before the workload (an archive's set-up).
 */
export async function recordDebianWal(
  into: string,
  {
    scale,
    seconds,
    flags = [],
    prepare,
  }: { scale: number; seconds: number; flags?: string[]; prepare?: (server: RunningServer) => Promise<void> },
): Promise<{ server: RunningServer; binDir: string; first: string; last: string }> {
  const binDir = await debianBinDir()
  const server = await startPostgres(
    ['-c', 'max_wal_size=8GB', '-c', 'wal_keep_size=8GB', '-c', 'checkpoint_timeout=1h', ...flags],
    { binDir },
  )
  try {
    await prepare?.(server)
    const client = new pg.Client(server.url)
    await client.connect()
    try {
      const segment = async () =>
        (await client.query<{ name: string }>('select pg_walfile_name(pg_current_wal_insert_lsn()) as name')).rows[0]!
          .name
      const first = await segment()
      await run('pgbench', ['-i', '-q', '-s', String(scale), server.url])
      await run('pgbench', ['-c', '2', '-T', String(seconds), server.url])
      for (const statement of [
        'create table tagged (id int4 primary key, tags int4[])',
        'create index tagged_tags on tagged using gin (tags) with (fastupdate = off)',
        'insert into tagged select i, array[i % 17, i % 101] from generate_series(1, 20000) i',
        'begin',
        'insert into tagged select i, null from generate_series(100001, 105000) i',
        'rollback',
        'truncate pgbench_history',
        'checkpoint',
        'update pgbench_branches set bbalance = bbalance + 1',
      ])
        await client.query(statement)
      const last = await segment()
      await client.query('select pg_switch_wal()')
      await mkdir(into, { recursive: true })
      for (const name of await readdir(join(server.dataDir, 'pg_wal')))
        if (/^[0-9A-F]{24}$/.test(name) && name >= first && name <= last)
          await copyFile(join(server.dataDir, 'pg_wal', name), join(into, name))
      return { server, binDir, first, last }
    } finally {
      await client.end()
    }
  } catch (error) {
    await server.stop()
    throw error
  }
}
