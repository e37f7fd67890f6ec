import { spawn } from 'node:child_process'
import pg from 'pg'
import { type RunningServer, startPostgres } from './postgres-server.js'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** What a walcost process printed, and how it exited. */
export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs the walcost CLI with `args` and, once `ready` (asked at each output and every 50 ms) says
 * so, stops it (SIGSTOP), runs `meanwhile`, lets it go on (SIGCONT) and closes its stdin (which a
 * command it observes may wait for): whatever it reads next, it reads only after `meanwhile` has
 * done what it does to the WAL.
 */
export function walcostHeld(
  args: readonly string[],
  ready: (printed: { stdout: string; stderr: string }) => boolean | Promise<boolean>,
  meanwhile: () => Promise<void>,
): Promise<Ran> {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let held = false
    let asking = false
    const goOn = () => {
      child.kill('SIGCONT')
      child.stdin.end()
    }
    const holdOnceReady = async () => {
      if (held || asking) return
      asking = true
      const now = await Promise.resolve(ready({ stdout, stderr })).finally(() => {
        asking = false
      })
      if (held || !now) return
      held = true
      clearInterval(asker)
      child.kill('SIGSTOP')
      meanwhile().then(goOn, (error: unknown) => {
        goOn()
        child.kill('SIGINT')
        reject(error)
      })
    }
    const ask = () => void holdOnceReady().catch(reject)
    const asker = setInterval(ask, 50)
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      ask()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      ask()
    })
    child.once('error', reject)
    child.once('close', (code) => {
      clearInterval(asker)
      resolve({ code, stdout, stderr })
    })
  })
}

/** A server whose segments a checkpoint recycles as soon as they lie before its redo, and who may read them. */
export interface RecyclingServer {
  server: RunningServer
  /** A superuser's connection: it switches segments and checkpoints. */
  admin: pg.Client
  /**
   * The connection string of a role that may read WAL files: `reader` may not make a replication
   * slot, `replicator` may. Both may insert into `events (id int8, payload text)`.
   */
  roleUrl(role: 'reader' | 'replicator'): string
  stop(): Promise<void>
}

/**
 * A server of its own: a test recycles every segment before the current one, and no other slot
 * may hold them (wal_keep_size 0, nothing archives).
 */
export async function startRecyclingServer(): Promise<RecyclingServer> {
  const server = await startPostgres(['-c', 'wal_keep_size=0', '-c', 'max_wal_size=64MB', '-c', 'min_wal_size=32MB'])
  const admin = new pg.Client({ connectionString: server.url })
  await admin.connect()
  await admin.query(`create table events (id int8, payload text);
    create role reader login password 'watcher';
    create role replicator login replication password 'watcher';
    grant execute on function pg_read_binary_file(text, bigint, bigint) to reader, replicator;
    grant insert on events to reader, replicator`)
  return {
    server,
    admin,
    roleUrl: (role) => server.url.replace(/\/\/[^@]*@/, `//${role}:watcher@`),
    async stop() {
      await admin.end()
      await server.stop()
    },
  }
}

/** Rows each round of `recycleCurrentSegment` inserts into `events`. */
export const ROWS_PER_RECYCLING_ROUND = 1000

/**
 * Switches away from the segment being written and checkpoints, twice (each checkpoint recycles
 * what lies before its redo), inserting ROWS_PER_RECYCLING_ROUND rows before each switch. True
 * when that segment's file is gone from pg_wal afterwards, false where a slot kept it.
 */
export async function recycleCurrentSegment(admin: pg.Client): Promise<boolean> {
  const [row] = (
    await admin.query<{ segment: string }>(`select pg_walfile_name(pg_current_wal_insert_lsn()) as segment`)
  ).rows
  for (let i = 0; i < 2; i++) {
    await admin.query(`insert into events select g, md5(g::text) from generate_series(1, $1::int) g`, [
      ROWS_PER_RECYCLING_ROUND,
    ])
    await admin.query('select pg_switch_wal()')
    await admin.query('checkpoint')
  }
  const files = await admin.query(`select name from pg_ls_waldir() where name = $1`, [row!.segment])
  return files.rows.length === 0
}
