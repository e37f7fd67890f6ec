import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import copyStreams from 'pg-copy-streams'
import type { Session } from './types.js'

type Queryable = pg.Client | pg.PoolClient

export function isPgPool(db: unknown): db is pg.Pool {
  return db instanceof pg.Pool || (typeof db === 'object' && db !== null && 'totalCount' in db && 'idleCount' in db && 'connect' in db)
}

export function isPgClient(db: unknown): db is pg.Client {
  return db instanceof pg.Client || (typeof db === 'object' && db !== null && 'connect' in db && 'query' in db && 'escapeIdentifier' in db)
}

/** A session on a connection string: walcost opens the connection and closes it. */
export async function openUrlSession(url: string): Promise<Session> {
  const client = new pg.Client({ connectionString: url, application_name: 'walcost' })
  // A connection that breaks while idle emits 'error'; without a listener that would crash the process.
  client.on('error', () => undefined)
  await client.connect()
  return pgSession(client, async () => {
    await client.end()
  })
}

/** A session on a caller's Pool: one client is checked out and returned (or destroyed if broken). */
export async function openPoolSession(pool: pg.Pool): Promise<Session> {
  const client = await pool.connect()
  return pgSession(client, async (broken) => {
    client.release(broken ? new Error('walcost: connection left in an unknown state') : undefined)
  })
}

/** A session on a caller's connected Client, which stays open and usable afterwards. */
export function clientSession(client: pg.Client): Session {
  return pgSession(client, async () => undefined)
}

function pgSession(client: Queryable, release: (broken: boolean) => Promise<void>): Session {
  return {
    backend: 'pg',
    embedded: false,
    async query<Row extends Record<string, unknown>>(sql: string, params: readonly unknown[] = []) {
      const result = await client.query<Row>(sql, [...params])
      return result.rows
    },
    async exec(sql) {
      await client.query(sql)
    },
    async copyIn(copySql, chunks) {
      const target = client.query(copyStreams.from(copySql))
      await pipeline(Readable.from(chunks, { objectMode: false }), target)
    },
    cancel() {
      const active = (client as unknown as { activeQuery?: unknown }).activeQuery
      if (!active) return
      // A cancel request goes over a connection of its own, to the same host and port.
      // pg's Client#cancel sends it; @types/pg does not declare the method.
      const canceller = new pg.Client({ host: client.host, port: client.port }) as pg.Client & { cancel(target: Queryable, query: unknown): void }
      canceller.on('error', () => undefined)
      canceller.cancel(client, active)
    },
    close: release,
  }
}
