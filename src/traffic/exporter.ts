import { createServer, type Server as HttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Counter, Gauge, Registry } from 'prom-client'
import { z } from 'zod'
import type { Database } from '../core/database.js'
import { DEFAULT_EXPORTER_INTERVAL_MS, DEFAULT_EXPORTER_LISTEN, DEFAULT_EXPORTER_TOP } from '../core/defaults.js'
import { fromServerError, WalcostError } from '../core/errors.js'
import { parseOptions } from '../core/options.js'
import { parseLsn } from '../decode/reader.js'
import { WAL_SOURCES } from '../wal/server.js'
import { keepWatching } from './keep-watching.js'
import type { WalObservation } from './observation.js'
import { type RelationLabels, RelationSeries } from './relation-series.js'
import { watchOptionsSchema } from './watch.js'

const watchShape = watchOptionsSchema.shape
const RELATION_LABELS = ['database', 'schema', 'relation', 'kind', 'table'] as const
/** Labels the exporter's own series carry: a constant label of the same name would hide them. */
const RESERVED_LABELS = new Set<string>([...RELATION_LABELS, 'source'])
const LISTEN = /^(?:\[(?<v6>[0-9A-Fa-f:.]+)\]|(?<host>[^:\s[\]]+)):(?<port>\d{1,5})$/

/** What `db` may be for a reader that opens a new connection after each failure. */
const reconnectableDatabase = z.unknown().superRefine((value, context) => {
  if (value === undefined) {
    context.addIssue({ code: 'custom', message: 'give the server whose WAL to export: its connection URL' })
    return
  }
  if (typeof value === 'string') {
    if (/^postgres(ql)?:\/\//i.test(value) && URL.canParse(value)) return
    context.addIssue({
      code: 'custom',
      message: 'expected a connection URL (postgres://user:password@host:5432/database)',
    })
    return
  }
  const isObject = typeof value === 'object' && value !== null
  const message =
    isObject && 'waitReady' in value
      ? "PGlite runs one session, in this process: nothing but walcost could write its WAL. Export a PostgreSQL server's WAL: give its connection URL"
      : isObject && 'totalCount' in value
        ? null
        : 'a pg Client cannot connect again once its connection is lost: give a connection URL (or a pg Pool)'
  if (message !== null) context.addIssue({ code: 'custom', message })
})

/**
 * Options of {@link serveWalMetrics}: the server to follow, where to serve its metrics, how often
 * to read, how many relations a database get series of their own, and labels for every series.
 *
 * @example
 * const options: WalMetricsOptions = { db: process.env.DATABASE_URL, listen: '0.0.0.0:9399', labels: { server: 'db1' } }
 */
export const walMetricsOptionsSchema = z.strictObject({
  db: reconnectableDatabase
    .transform((value) => value as Database)
    .describe(
      "The server whose WAL is exported: a connection URL (or a pg Pool); a new connection is opened after each failure. Connect to the database whose relations you want named: other databases' relations are labelled by relfilenode.",
    ),
  connectTimeoutMs: watchShape.connectTimeoutMs,
  lockTimeoutMs: watchShape.lockTimeoutMs,
  statementTimeoutMs: watchShape.statementTimeoutMs,
  flushTimeoutMs: watchShape.flushTimeoutMs,
  listen: z
    .string()
    .regex(LISTEN, 'expected HOST:PORT, e.g. 127.0.0.1:9399 or [::1]:9399 (port 0: any free port)')
    .refine((text) => Number(LISTEN.exec(text)?.groups?.port) <= 65_535, 'a port is at most 65535')
    .default(DEFAULT_EXPORTER_LISTEN)
    .describe('Where the HTTP server listens, HOST:PORT; it serves the metrics at /metrics.'),
  intervalMs: watchShape.intervalMs
    .unwrap()
    .default(DEFAULT_EXPORTER_INTERVAL_MS)
    .describe('How often the WAL is read: the counters move at this pace, whatever the scrape interval.'),
  top: z
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(DEFAULT_EXPORTER_TOP)
    .describe(
      'Relations a database with series of their own: the first to write WAL, more bytes first; the rest add up in relation="other".',
    ),
  labels: z
    .record(
      z
        .string()
        .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'a label name is letters, digits and underscores, not starting with a digit')
        .refine((name) => !name.startsWith('__'), 'names starting with __ are reserved to Prometheus')
        .refine((name) => !RESERVED_LABELS.has(name), `the exporter's series use ${[...RESERVED_LABELS].join(', ')}`),
      z.string(),
    )
    .default({})
    .describe('Constant labels on every series, e.g. { server: "db1" }: one exporter a server, told apart.'),
  signal: watchShape.signal.describe('Closes the exporter, as close() does.'),
  onError: z
    .custom<(error: Error, retryInMs: number) => unknown>((value) => typeof value === 'function', {
      message: 'expected a function',
    })
    .optional()
    .describe(
      'Told of each failure the exporter outlives (a lost connection, a server restart, WAL removed before it was read) and when it tries again.',
    ),
})

export type WalMetricsOptions = z.input<typeof walMetricsOptionsSchema>

/** A running exporter. */
export interface WalMetricsServer {
  /** Where the HTTP server is bound (the port the system chose, for port 0). */
  address: { host: string; port: number }
  /** The metrics' URL. */
  url: string
  /**
   * Settles once the exporter has stopped: null after close() (or `signal`), else the error that
   * ended it (options or a server it cannot follow), its HTTP server closed too. Never rejects.
   */
  ended: Promise<WalcostError | null>
  /** Stops reading (its sessions closed, their temporary slot with them) and closes the HTTP server. */
  close(): Promise<void>
}

/** The exporter's series, in one registry of its own. */
interface Metrics {
  registry: Registry
  bytes: Counter<(typeof RELATION_LABELS)[number]>
  records: Counter<(typeof RELATION_LABELS)[number]>
  fpi: Counter<(typeof RELATION_LABELS)[number]>
  fpiBytes: Counter<(typeof RELATION_LABELS)[number]>
  unattributed: Counter<'kind'>
  missed: Counter
  readLsn: Gauge
  lag: Gauge
  up: Gauge
  source: Gauge<'source'>
}

/** prom-client is loaded here only: no other command pays for it at start-up. */
async function makeMetrics(labels: Record<string, string>): Promise<Metrics> {
  const prom = await import('prom-client')
  const registry = new prom.Registry()
  registry.setDefaultLabels(labels)
  prom.collectDefaultMetrics({ register: registry })
  const gauge = (name: string, help: string) => new prom.Gauge({ name, help, registers: [registry] })
  const relationCounter = (name: string, help: string) =>
    new prom.Counter({ name, help, labelNames: RELATION_LABELS, registers: [registry] })
  return {
    registry,
    bytes: relationCounter(
      'walcost_wal_bytes_total',
      "WAL bytes by relation: its records' bytes without images (a record counts to its first block's relation) and the images of its blocks.",
    ),
    records: relationCounter('walcost_wal_records_total', 'WAL records whose first block is the relation.'),
    fpi: relationCounter('walcost_wal_fpi_total', "Full-page images of the relation's blocks."),
    fpiBytes: relationCounter('walcost_wal_fpi_bytes_total', "Bytes of the full-page images of the relation's blocks."),
    unattributed: new prom.Counter({
      name: 'walcost_wal_unattributed_bytes_total',
      help: 'WAL bytes of no relation, by kind (commits, checkpoints, page headers, ...): with walcost_wal_bytes_total, every byte read.',
      labelNames: ['kind'],
      registers: [registry],
    }),
    missed: new prom.Counter({
      name: 'walcost_wal_missed_bytes_total',
      help: 'WAL bytes the server removed before the exporter could read them, after a lost connection: counted nowhere else.',
      registers: [registry],
    }),
    readLsn: gauge(
      'walcost_wal_read_lsn_bytes',
      'How far the WAL has been read: the end of the last interval read, in bytes from 0/0.',
    ),
    lag: gauge('walcost_wal_read_lag_bytes', 'The insert position at the last interval taken, less the read position.'),
    up: gauge(
      'walcost_up',
      '1 while the exporter is connected and following the WAL, 0 while it waits to connect again.',
    ),
    source: new prom.Gauge({
      name: 'walcost_wal_source',
      help: '1 for the route the WAL is read by: replication, files or walinspect (each split by relation), totals (the role may not read the WAL).',
      labelNames: ['source'],
      registers: [registry],
    }),
  }
}

/** Where the HTTP server listens, as node:http takes it. */
function listenAddress(listen: string): { host: string; port: number } {
  const groups = LISTEN.exec(listen)?.groups ?? {}
  return { host: groups.v6 ?? groups.host ?? '127.0.0.1', port: Number(groups.port) }
}

/**
 * Serves the WAL of a server by relation, in Prometheus' text format at `/metrics`: the server's
 * WAL followed interval after interval as watchWal does (the same reader and attribution),
 * counted into counters by relation that never go backwards while the process lives, and kept
 * following across lost connections and server restarts. Resolves once the HTTP server listens.
 *
 * @example
 * const exporter = await serveWalMetrics({ db: process.env.DATABASE_URL, listen: '127.0.0.1:9399', labels: { server: 'db1' } })
 * // ... later
 * await exporter.close()
 */
export async function serveWalMetrics(options: WalMetricsOptions): Promise<WalMetricsServer> {
  const parsed = parseOptions(walMetricsOptionsSchema, options)
  const metrics = await makeMetrics(parsed.labels)
  metrics.up.set(0)
  const http = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end()
      return
    }
    if (path !== '/metrics') {
      response
        .writeHead(path === '/' ? 200 : 404, { 'content-type': 'text/plain; charset=utf-8' })
        .end(
          path === '/' ? 'walcost exporter: the metrics are at /metrics\n' : 'not found: the metrics are at /metrics\n',
        )
      return
    }
    const scrape = count.scrape(() => metrics.registry.metrics())
    scrape.then(
      (text) => response.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (error: unknown) =>
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(error)}\n`),
    )
  })
  const count = counting(metrics, parsed.top)
  const address = await bind(http, listenAddress(parsed.listen))

  const stop = new AbortController()
  const onSignal = () => stop.abort()
  parsed.signal?.addEventListener('abort', onSignal, { once: true })
  if (parsed.signal?.aborted) stop.abort()
  const { db, listen: _listen, top: _top, labels: _labels, onError, signal: _signal, ...limits } = parsed
  const ended = keepWatching(
    { ...limits, db, signal: stop.signal },
    {
      onInterval: count.interval,
      onWindowEnd: count.windowEnd,
      onUp: () => metrics.up.set(1),
      onDown: (error, retryInMs) => {
        metrics.up.set(0)
        onError?.(error, retryInMs)
      },
      onMissed: (from, to) => metrics.missed.inc(to.bytes - from.bytes),
    },
  ).then(
    () => null,
    (error: unknown) => fromServerError(error, 'following the WAL'),
  )
  const closed = ended.then(async (error) => {
    parsed.signal?.removeEventListener('abort', onSignal)
    metrics.up.set(0)
    await new Promise<void>((resolve) => {
      http.close(() => resolve())
      http.closeAllConnections()
    })
    metrics.registry.clear()
    return error
  })
  return {
    address,
    url: `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}/metrics`,
    ended: closed,
    async close() {
      stop.abort()
      await closed
    },
  }
}

/**
 * What each interval and each interval's end do to the series. A scrape sees one state of them:
 * prom-client collects the series one after another, asynchronously, and an interval counted
 * meanwhile would show some series before it and others after it (the read position ahead of the
 * counters), so an interval waits for the scrapes under way.
 */
function counting(metrics: Metrics, top: number) {
  const series = new RelationSeries(top)
  let readTo = 0
  let seen = 0
  let scraping: Promise<unknown> = Promise.resolve()
  const setLag = () => metrics.lag.set(Math.max(0, seen - readTo))
  const add = (labels: RelationLabels, counter: Counter<(typeof RELATION_LABELS)[number]>, value: number) =>
    counter.inc({ ...labels }, value)
  return {
    scrape(collect: () => Promise<string>): Promise<string> {
      const text = collect()
      const settled = text.catch(() => undefined)
      scraping = Promise.all([scraping, settled])
      return text
    },
    async interval(observation: WalObservation<'server'>): Promise<void> {
      for (let waited = scraping; ; waited = scraping) {
        await waited
        if (waited === scraping) break
      }
      const { relations, unattributed, window } = observation
      if (relations && unattributed) {
        for (const increment of series.increments(relations)) {
          add(increment.labels, metrics.bytes, increment.bytes)
          add(increment.labels, metrics.records, increment.records)
          add(increment.labels, metrics.fpi, increment.fpiCount)
          add(increment.labels, metrics.fpiBytes, increment.fpiBytes)
        }
        for (const part of unattributed) metrics.unattributed.inc({ kind: part.kind }, part.bytes)
      } else metrics.unattributed.inc({ kind: 'not split' }, window.bytes)
      for (const source of WAL_SOURCES) metrics.source.set({ source }, observation.walSource === source ? 1 : 0)
      readTo = parseLsn(window.endLsn)
      seen = Math.max(seen, readTo)
      metrics.readLsn.set(readTo)
      setLag()
    },
    windowEnd(end: { bytes: number }): void {
      seen = end.bytes
      setLag()
    },
  }
}

/** Listens at `at`; a port taken or an address not here is the caller's option's fault. */
function bind(http: HttpServer, at: { host: string; port: number }): Promise<{ host: string; port: number }> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) =>
      reject(
        new WalcostError(
          'INVALID_OPTIONS',
          `listen: cannot listen on ${at.host}:${at.port} (${error.message}): give another HOST:PORT, one free on an address of this machine (port 0: any free port).`,
          { field: 'listen', cause: error },
        ),
      )
    http.once('error', onError)
    http.listen(at.port, at.host, () => {
      http.off('error', onError)
      const bound = http.address() as AddressInfo
      resolve({ host: bound.address, port: bound.port })
    })
  })
}
