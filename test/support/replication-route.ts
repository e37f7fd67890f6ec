import { spawn } from 'node:child_process'
import { join } from 'node:path'
import type pg from 'pg'
import { expect } from 'vitest'
import { inspectWal, measureInsertCost, observeWal, type WalObservation } from '../../src/index.js'
import { expectAgreesWithWalinspect } from './block-info.js'
import type { RunningServer } from './postgres-server.js'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** A role that may stream WAL and nothing more: no superuser, no pg_read_binary_file, no pg_walinspect. */
export const STREAMER_SETUP = `
  create table streamed (id int8 primary key, payload text) with (autovacuum_enabled = false);
  create index streamed_payload on streamed (payload);
  create role streamer login replication password 'streamer';
  grant select, insert, update, delete on streamed to streamer`

/** A role that may call pg_walinspect's functions (16+) and nothing more: no REPLICATION, no pg_read_binary_file. Run after STREAMER_SETUP. */
export const INSPECTOR_SETUP = `
  create role inspector login password 'inspector' in role pg_read_server_files;
  grant select, insert, update, delete on streamed to inspector`

/** A least-privilege route to the WAL: the role that has it, the walSource its results name, and the ids its writes start at. */
export interface WalRoute {
  role: string
  walSource: 'replication' | 'walinspect'
  firstId: number
}

export const REPLICATION_ROUTE: WalRoute = { role: 'streamer', walSource: 'replication', firstId: 0 }
export const WALINSPECT_ROUTE: WalRoute = { role: 'inspector', walSource: 'walinspect', firstId: 10_000_000 }

export const roleUrl = (server: RunningServer, role: string, password: string): string =>
  server.url.replace(/\/\/[^@]*@/, `//${role}:${password}@`)

/** Bytes by relation name, as an observation has them (names only: every relation here is named). */
function bytesByName(observation: WalObservation, names: readonly string[]): Record<string, number> {
  const byName: Record<string, number> = {}
  for (const name of names) {
    byName[name] = (observation.relations ?? [])
      .filter((relation) => relation.name === name && relation.schema === 'public')
      .reduce((sum, relation) => sum + relation.bytes, 0)
  }
  return byName
}

/** The same window read from the server's WAL files (inspectWal on pg_wal), named through the admin's connection. */
function filesRoute(server: RunningServer, from: string, to: string): Promise<WalObservation<'files'>> {
  return inspectWal({ dir: join(server.dataDir, 'pg_wal'), from, to, db: server.url })
}

const RELATIONS = ['streamed', 'streamed_pkey', 'streamed_payload'] as const

/** Committed inserts and updates on `streamed` from the admin's connection. */
async function write(admin: pg.Client, from: number, rows: number): Promise<void> {
  await admin.query(
    `insert into streamed select g, md5(g::text) from generate_series($1::int8, $1::int8 + $2::int8 - 1) g`,
    [from, rows],
  )
  await admin.query(`update streamed set payload = payload || 'x' where id between $1::int8 and $1::int8 + 99`, [from])
}

/** walcost's slots left on the server, once every walsender it had has ended (within 10 s). */
async function slotsLeft(admin: pg.Client): Promise<string[]> {
  for (let waited = 0; ; waited += 100) {
    const { rows } = await admin.query<{ name: string }>(
      `select slot_name::text as name from pg_replication_slots where slot_name like 'walcost%'`,
    )
    if (rows.length === 0 || waited >= 10_000) return rows.map((row) => row.name)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Runs `walcost top --json` as `url` while `whileRunning` writes; the intervals it printed. */
export function topIntervals(
  url: string,
  seconds: number,
  whileRunning: () => Promise<void>,
): Promise<WalObservation[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [cli, 'top', '--url', url, '--json', '--interval', '1', '--seconds', String(seconds)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    let writing: Promise<void> | null = null
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (!writing && stdout.includes('\n')) {
        writing = whileRunning()
        writing.catch(reject)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('error', reject)
    child.once('close', async (code) => {
      await writing
      if (code !== 0) reject(new Error(`walcost top exited ${code}: ${stderr}`))
      else
        resolve(
          stdout
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as WalObservation),
        )
    })
  })
}

/**
 * A role with only `route`'s privilege gets every relation named and split in measureInsertCost,
 * observeWal and walcost top, read by that route (REPLICATION: over the replication protocol;
 * pg_read_server_files: by pg_walinspect on the server), byte for byte what the files give for
 * the same window, and pg_walinspect's block info where the server has it (16+); and leaves no
 * slot behind.
 */
export async function expectRouteSplits(
  server: RunningServer,
  admin: pg.Client,
  major: number,
  route: WalRoute,
): Promise<void> {
  const url = roleUrl(server, route.role, route.role)
  const blockInfo = major >= 16
  if (blockInfo) await admin.query('create extension if not exists pg_walinspect')
  const first = route.firstId
  await write(admin, first + 1, 1_000)

  const cost = await measureInsertCost({ db: url, table: 'streamed', count: 2_000 })
  expect(cost.walSource).toBe(route.walSource)
  // A measurement read by pg_walinspect says so: it names each image under its record's first relation.
  expect(cost.attribution).toBe(route.walSource === 'walinspect' ? 'walinspect' : 'wal')
  expect(cost.indexes.map((index) => index.name)).toEqual(['streamed_payload', 'streamed_pkey'])
  for (const index of cost.indexes) expect(index.walBytes, index.name).toBeGreaterThan(2_000 * 20)
  expect(cost.heap!.walBytes).toBeGreaterThan(2_000 * 50)
  const measured = await filesRoute(server, cost.window.startLsn, cost.window.endLsn)
  expect(measured.walSource).toBe('files')
  // Nothing but the batch wrote these relations in the window (autovacuum is off for the table).
  expect({
    streamed: cost.heap!.walBytes,
    ...Object.fromEntries(cost.indexes.map((index) => [index.name, index.walBytes])),
  }).toEqual(bytesByName(measured, RELATIONS))

  const observation = await observeWal({ db: url, run: () => write(admin, first + 10_000, 3_000) })
  expect(observation.walSource).toBe(route.walSource)
  expect(observation.attribution).toBe('wal')
  const observed = bytesByName(observation, RELATIONS)
  for (const name of RELATIONS) expect(observed[name], name).toBeGreaterThan(3_000 * 20)
  const files = await filesRoute(server, observation.window.startLsn, observation.window.endLsn)
  expect(files.window.bytes).toBe(observation.window.bytes)
  expect(observation.relations).toEqual(files.relations)
  expect(observation.unattributed).toEqual(files.unattributed)
  if (blockInfo)
    await expectAgreesWithWalinspect(
      { query: async (sql, params) => (await admin.query(sql, params)).rows },
      observation,
    )

  let next = first + 100_000
  const intervals = await topIntervals(url, 4, async () => {
    for (let round = 0; round < 6; round++, next += 500) {
      await write(admin, next, 500)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  })
  expect(intervals.length).toBeGreaterThanOrEqual(2)
  for (const interval of intervals) {
    expect(interval.walSource).toBe(route.walSource)
    expect(interval.attribution).toBe('wal')
    // An interval in which nothing was written has no records to read from the files.
    if (interval.window.bytes === 0) continue
    const read = await filesRoute(server, interval.window.startLsn, interval.window.endLsn)
    expect(interval.relations).toEqual(read.relations)
  }
  const written = intervals.map((interval) => bytesByName(interval, RELATIONS))
  for (const name of RELATIONS)
    expect(
      written.reduce((sum, bytes) => sum + (bytes[name] ?? 0), 0),
      name,
    ).toBeGreaterThan(0)

  expect(await slotsLeft(admin)).toEqual([])
}
