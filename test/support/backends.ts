import { randomBytes } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import { pg_walinspect } from '@electric-sql/pglite/contrib/pg_walinspect'
import pg from 'pg'
import { describe, inject } from 'vitest'
import { openSession } from '../../src/driver/open.js'
import type { Session } from '../../src/driver/types.js'
import type { Database } from '../../src/index.js'
import { selectedBackends } from './selected-backends.js'

/** A database of its own for one suite, on one backend, plus a side connection to inspect it. */
export interface TestDatabase {
  db: Database
  /** The connection string, on a real server. */
  url: string | undefined
  query<Row extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>
  exec(sql: string): Promise<void>
  close(): Promise<void>
}

export interface Backend {
  name: 'pglite' | 'postgres'
  open(): Promise<TestDatabase>
}

const pglite: Backend = {
  name: 'pglite',
  async open() {
    const db = await PGlite.create({ extensions: { pg_walinspect } })
    await db.exec('create extension pg_walinspect')
    return {
      db,
      url: undefined,
      query: async (sql, params = []) => (await db.query<never>(sql, params)).rows,
      exec: async (sql) => {
        await db.exec(sql)
      },
      close: () => db.close(),
    }
  },
}

/** A fresh database on the suite's PostgreSQL, dropped afterwards. */
export async function openPostgresDatabase(serverUrl: string): Promise<TestDatabase> {
  const name = `walcost_test_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  const url = serverUrl.replace(/\/[^/]*$/, `/${name}`)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('create extension pg_walinspect')
  return {
    db: url,
    url,
    query: async (sql, params = []) => (await client.query(sql, params)).rows,
    exec: async (sql) => {
      await client.query(sql)
    },
    close: async () => {
      await client.end()
      await admin.query(`drop database ${name} with (force)`)
      await admin.end()
    },
  }
}

const postgres: Backend = {
  name: 'postgres',
  open: () => openPostgresDatabase(inject('postgresUrl')),
}

/** Every backend a measurement must agree on: the same suite runs over each (those WALCOST_BACKENDS selects). */
export const backends: Backend[] = [pglite, postgres].filter((backend) => selectedBackends().includes(backend.name))

/** For suites that need the real server: skipped when WALCOST_BACKENDS leaves it out. */
export const describeOnPostgres: ReturnType<typeof describe.runIf> = describe.runIf(
  selectedBackends().includes('postgres'),
)

/** A walcost session on `db` for tests that drive its modules directly, with bounds that fit a loaded machine. */
export function openTestSession(db: Database): Promise<Session> {
  return openSession(db, { connectTimeoutMs: 10_000, lockTimeoutMs: 10_000, statementTimeoutMs: undefined })
}
