import { connect } from 'node:net'
import { type Duplex, type DuplexOptions, Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import pg from 'pg'
import copyStreams from 'pg-copy-streams'
import type { SessionLimits } from '../core/database.js'
import { CLOSE_TIMEOUT_MS } from '../core/defaults.js'
import { sqlStateOf, WalcostError } from '../core/errors.js'
import { cleanUp } from './clean-up.js'
import { keepingFirstFailure } from './first-failure.js'
import { keptByWalcost, lend } from './lend.js'
import { CopyOutQuery } from './pg-copy-out.js'
import type { ReplicationConnection, Session } from './types.js'

type Queryable = pg.Client | pg.PoolClient

export function isPgPool(db: unknown): db is pg.Pool {
  return (
    db instanceof pg.Pool ||
    (typeof db === 'object' && db !== null && 'totalCount' in db && 'idleCount' in db && 'connect' in db)
  )
}

export function isPgClient(db: unknown): db is pg.Client {
  return (
    db instanceof pg.Client ||
    (typeof db === 'object' && db !== null && 'connect' in db && 'query' in db && 'escapeIdentifier' in db)
  )
}

/**
 * libpq's order: the URL's connect_timeout (seconds), then PGCONNECT_TIMEOUT, then walcost's bound.
 * pg reads neither of the first two for its own timer, so walcost does.
 */
export function connectTimeoutMs(url: string | undefined, fallbackMs: number): number {
  const given =
    (url === undefined ? undefined : /[?&]connect_timeout=([^&#]*)/.exec(url)?.[1]) ?? process.env.PGCONNECT_TIMEOUT
  const seconds = Number(given)
  return given !== undefined && Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : fallbackMs
}

/** Who walcost tried to connect as, for the message: the server, and the user and database when known. */
interface ConnectTarget {
  where: string
  user?: string | undefined
  database?: string | undefined
}

/** What went wrong connecting, in words: the server's refusal, a refused port, or a real timeout. */
function connectFailure(target: ConnectTarget, timeoutMs: number, cause: unknown): WalcostError {
  const text = cause instanceof Error ? cause.message : String(cause)
  const code = (cause as { code?: unknown } | null)?.code
  const { where, user, database } = target
  const said = (sentence: string) => new WalcostError('CONNECTION_FAILED', `${sentence} (${text}).`, { cause })
  if (code === '28P01' || code === '28000') {
    return said(
      `${where} refused the login: authentication failed for user ${user ?? '(default)'}. Check the user and password in the URL (or PGUSER and PGPASSWORD), and pg_hba.conf`,
    )
  }
  if (code === '3D000') {
    return said(
      `database ${database ?? '(default)'} does not exist on ${where}. Create it, or name an existing one in the URL`,
    )
  }
  if (code === 'ECONNREFUSED') {
    return said(`connection refused by ${where}: no server listens there. Check that it is up, and the host and port`)
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return said(`the host of ${where} was not found. Check its name`)
  if (/timeout|timed out|in time/i.test(text) || code === 'ETIMEDOUT') {
    return said(
      `could not connect to ${where} within ${timeoutMs / 1000} s. Check that the server is up and reachable from here; if it is only slow to answer, raise connectTimeoutMs (or connect_timeout in the URL)`,
    )
  }
  return said(`could not connect to ${where}`)
}

/** A session on a connection string: walcost opens the connection and closes it. */
export async function openUrlSession(url: string, limits: SessionLimits): Promise<Session> {
  const client = await connectOwned({ connectionString: url }, limits)
  const held = holdClient(client)
  return pgSession(client, held, limits, {
    restoreSettings: false,
    release: () => endWithin(client, CLOSE_TIMEOUT_MS),
    openSibling: () => openUrlSession(url, limits),
    replicationConfig: { connectionString: url },
  })
}

/**
 * A connection walcost opens and owns, within the connect bound, its failure said as
 * connectFailure says it. Nothing else listens to the client: walcost's listener stays through
 * end() and after, so that its 'error' event (a terminated backend) cannot crash the host; the
 * failure reaches whatever reads from it.
 */
async function connectOwned(config: pg.ClientConfig, limits: SessionLimits): Promise<pg.Client> {
  const timeoutMs = connectTimeoutMs(config.connectionString, limits.connectTimeoutMs)
  const client = new pg.Client({ ...config, application_name: 'walcost', connectionTimeoutMillis: timeoutMs })
  client.on('error', () => undefined)
  try {
    await client.connect()
  } catch (error) {
    throw connectFailure(
      { where: `${client.host}:${client.port}`, user: client.user, database: client.database },
      timeoutMs,
      error,
    )
  }
  return client
}

/**
 * Ends a client walcost opened. pg resolves end() once the socket closes, which a connection that
 * stopped delivering (see CopyOutQuery) never reports: after `timeoutMs` the socket is destroyed.
 */
async function endWithin(client: pg.Client, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const ended = client.end().catch(() => undefined)
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      client.connection.stream.destroy()
      resolve()
    }, timeoutMs)
  })
  try {
    await Promise.race([ended, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A session on a caller's Pool: one client is checked out, within the connect bound even when the
 * pool has none of its own, and returned (or destroyed if broken).
 */
export async function openPoolSession(pool: pg.Pool, limits: SessionLimits): Promise<Session> {
  const checkout = pool.connect()
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('no connection came from the pool in time')), limits.connectTimeoutMs)
  })
  let client: pg.PoolClient
  try {
    client = await Promise.race([checkout, timeout])
  } catch (error) {
    // A client that arrives after the bound goes straight back.
    checkout.then(
      (late) => late.release(),
      () => undefined,
    )
    throw connectFailure({ where: "the pool's server" }, limits.connectTimeoutMs, error)
  } finally {
    clearTimeout(timer)
  }
  return pgSession(client, holdClient(client), limits, {
    restoreSettings: true,
    pooled: true,
    release: async (broken) => {
      client.release(broken ? new Error('walcost: connection left in an unknown state') : undefined)
    },
    // Only a connection the pool can give at once: waiting for one the caller's code holds could wait forever.
    openSibling: async () =>
      pool.idleCount > 0 || pool.totalCount < (pool.options.max ?? 10) ? openPoolSession(pool, limits) : null,
    replicationConfig: pool.options,
  })
}

/** A session on a caller's connected Client, which stays open and usable afterwards. */
export function clientSession(client: pg.Client, limits: SessionLimits): Promise<Session> {
  const { user, database, host, port, password, ssl } = (client as unknown as { connectionParameters: pg.ClientConfig })
    .connectionParameters
  return pgSession(client, holdClient(client), limits, {
    restoreSettings: true,
    release: async () => undefined,
    replicationConfig: { user, database, host, port, password, ssl },
  })
}

/** pg-copy-streams' CopyBoth, which its type declarations leave out. */
const copyBoth = (
  copyStreams as unknown as {
    both(text: string, options: DuplexOptions & { alignOnCopyDataFrame: boolean }): Duplex & pg.Submittable
  }
).both

/** How long ending a replication connection may take before its socket is closed under it. */
const REPLICATION_END_MS = 2_000

/** A replication connection (replication=database) with `config`'s server and role. */
async function openReplicationConnection(
  config: pg.ClientConfig,
  limits: SessionLimits,
): Promise<ReplicationConnection> {
  // pg sends `replication` in the startup message; its type declarations leave it out.
  const client = await connectOwned({ ...config, replication: 'database' } as pg.ClientConfig, limits)
  const socket = (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream
  return {
    pid: (client as unknown as { processID: number }).processID,
    command: async (sql) => (await client.query(sql)).rows,
    copyBoth: (sql) => client.query(copyBoth(sql, { alignOnCopyDataFrame: true })),
    async close() {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          socket.destroy()
          resolve()
        }, REPLICATION_END_MS)
      })
      await Promise.race([client.end().catch(() => undefined), late])
      clearTimeout(timer)
    },
  }
}

interface HeldClient {
  /** The connection's own failure, once it has one: every later statement fails with it. */
  readonly fault: Error | undefined
  /** Marks the connection as one that must not run another statement. */
  fail(error: Error): void
  /** Removes walcost's listener; the caller's own listeners were never touched. */
  letGo(): void
}

/**
 * A client emits 'error' when its connection breaks (a terminated backend, a failover); with no
 * listener, Node turns that into an uncaught exception that takes the caller's process down. A
 * pooled client has none while checked out, so walcost listens for as long as it holds one.
 */
function holdClient(client: Queryable): HeldClient {
  let fault: Error | undefined
  const listener = (error: Error) => {
    fault ??= error
  }
  client.on('error', listener)
  return {
    get fault() {
      return fault
    },
    fail: listener,
    letGo: () => {
      client.removeListener('error', listener)
    },
  }
}

/** The protocol's CancelRequest code, sent in place of a protocol version. */
const CANCEL_REQUEST_CODE = 80877102

/**
 * Asks the server to cancel the statement the client runs now: a CancelRequest on a connection of
 * its own to the same host and port, with the backend's key. Written out because pg's own
 * Client#cancel reads the deprecated activeQuery; the socket is bounded like any connect.
 */
function sendCancelRequest(client: Queryable, timeoutMs: number): void {
  const { processID, secretKey } = client as unknown as { processID: number | null; secretKey: number | null }
  if (processID === null || secretKey === null) return
  const socket = client.host.startsWith('/')
    ? connect(`${client.host}/.s.PGSQL.${client.port}`)
    : connect(client.port, client.host)
  socket.setTimeout(timeoutMs, () => socket.destroy())
  socket.on('error', () => undefined)
  socket.on('connect', () => {
    const message = Buffer.alloc(16)
    message.writeInt32BE(16, 0)
    message.writeInt32BE(CANCEL_REQUEST_CODE, 4)
    message.writeInt32BE(processID, 8)
    message.writeInt32BE(secretKey, 12)
    socket.end(message)
  })
}

const BOUNDED_SETTINGS = ['lock_timeout', 'statement_timeout'] as const

/**
 * Applies the limits to the whole session, so that catalog reads and setup are bounded as much as
 * the batch; a caller's connection gets its own values back when walcost is done with it.
 */
async function pgSession(
  client: Queryable,
  held: HeldClient,
  limits: SessionLimits,
  ending: {
    restoreSettings: boolean
    pooled?: boolean
    release: (broken: boolean) => Promise<void>
    openSibling?: () => Promise<Session | null>
    /** How to reach the same server as the same role over a replication connection. */
    replicationConfig?: pg.ClientConfig
  },
): Promise<Session> {
  const statements = keepingFirstFailure()
  const run = async <Row extends Record<string, unknown>>(sql: string, params?: readonly unknown[]) => {
    if (held.fault) throw held.fault
    return statements.run(
      async () => (await client.query<Row>(sql, params === undefined ? undefined : [...params])).rows,
    )
  }
  const wanted: Record<(typeof BOUNDED_SETTINGS)[number], string | undefined> = {
    lock_timeout: `${limits.lockTimeoutMs}ms`,
    statement_timeout: limits.statementTimeoutMs === undefined ? undefined : `${limits.statementTimeoutMs}ms`,
  }
  const previous = new Map<string, string>()
  try {
    for (const name of BOUNDED_SETTINGS) {
      const value = wanted[name]
      if (value === undefined) continue
      const [row] = await run<{ previous: string }>(
        'select current_setting($1) as previous, set_config($1, $2, false)',
        [name, value],
      )
      if (row) previous.set(name, row.previous)
    }
  } catch (error) {
    held.letGo()
    await ending.release(true).catch(() => undefined)
    throw error
  }
  return {
    backend: 'pg',
    embedded: false,
    ...(ending.pooled ? { pooled: true } : {}),
    query: run,
    async exec(sql) {
      await run(sql)
    },
    async copyIn(copySql, chunks) {
      if (held.fault) throw held.fault
      await statements.run(() =>
        pipeline(Readable.from(chunks, { objectMode: false }), client.query(copyStreams.from(copySql))),
      )
    },
    async *copyOut(copySql) {
      if (held.fault) throw held.fault
      const source = client.query(new CopyOutQuery(copySql))
      let ended = false
      try {
        yield* source.chunksOf()
        statements.succeeded()
        ended = true
      } catch (error) {
        // The server ended the COPY with an error (a cancel): the connection goes on, ready for
        // the rollback. Anything else (a stall) leaves it in the middle of the COPY.
        if (sqlStateOf(error) !== undefined) ended = true
        throw statements.failed(error)
      } finally {
        // A COPY left before its end leaves the connection in the middle of it: never used again.
        if (!ended) held.fail(new Error('walcost: a COPY was left before its end'))
      }
    },
    // The Client or PoolClient itself, so that drizzle(client) and a repository function take it as they are.
    lend: (beforeSavepointEnds) =>
      lend(
        client,
        { query: ['query'], refused: ['end', 'connect'], own: { release: keptByWalcost } },
        beforeSavepointEnds,
        statements,
      ),
    ...(ending.openSibling ? { openSibling: ending.openSibling } : {}),
    ...(ending.replicationConfig
      ? { openReplication: () => openReplicationConnection(ending.replicationConfig as pg.ClientConfig, limits) }
      : {}),
    cancel() {
      sendCancelRequest(client, limits.connectTimeoutMs)
    },
    async close(broken = false) {
      // A caller's connection that still answers gets its settings back even after a failed call
      // (a clean-up: tried again once). Restored or not, a failure is said once the connection is
      // released.
      let unusable = broken || held.fault !== undefined
      let failure: unknown = null
      if (ending.restoreSettings && held.fault === undefined) {
        const restored = await cleanUp(async () => {
          for (const [name, value] of previous) await run('select set_config($1, $2, false)', [name, value])
        })
        failure = restored.failure
        unusable ||= !restored.done
      }
      held.letGo()
      await ending.release(unusable)
      if (failure !== null) throw failure
    },
  }
}
