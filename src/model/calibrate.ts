import type { z } from 'zod'
import { WalcostError } from '../core/errors.js'
import { connectionOptionsSchema, parseOptions } from '../core/options.js'
import type { Session } from '../driver/types.js'
import { onDatabase } from '../measure/lifecycle.js'

export const calibrateOptionsSchema = connectionOptionsSchema

export interface StorageCalibration {
  /** Average time of one WAL flush on this server, ms. */
  fsyncMs: number
  flushes: number
  source: string
}

/**
 * The server's own average WAL flush time, from pg_stat_io (PostgreSQL 18) or pg_stat_wal (14-17),
 * to combine with a storage preset: `{ ...STORAGE_PRESETS.gp3, ...(await calibrateStorage({ db })) }`.
 * Needs track_wal_io_timing = on, and flushes since the statistics were reset.
 *
 * @example
 * const storage = { ...STORAGE_PRESETS.gp3, ...(await calibrateStorage({ db: process.env.DATABASE_URL })) }
 */
export async function calibrateStorage(options: z.input<typeof calibrateOptionsSchema>): Promise<StorageCalibration> {
  const parsed = parseOptions(calibrateOptionsSchema, options)
  return onDatabase(
    parsed,
    async (session) => {
      const counters = await readWalFlushes(session)
      const flushes = counters.flushes
      if (flushes === 0) {
        throw new WalcostError(
          'UNSUPPORTED_SERVER',
          'the server has timed no WAL flushes yet (fsync may be off, or no commits since the statistics were reset): calibrate after it has run under load.',
        )
      }
      return {
        fsyncMs: counters.ms / flushes,
        flushes,
        source: `${flushes} WAL flushes timed by ${counters.view} on the server`,
      }
    },
    { readsWal: false },
  )
}

/** The view that counts the server's WAL flushes: pg_stat_io from PostgreSQL 18, pg_stat_wal before. */
export type WalFlushView = 'pg_stat_io' | 'pg_stat_wal'

/**
 * The server's WAL flushes and their time so far; refuses a server that does not time them. A caller
 * that reads them again gives the view the first reading found, which skips finding it again.
 */
export async function readWalFlushes(
  session: Session,
  known?: WalFlushView,
): Promise<{ flushes: number; ms: number; writeMs: number; view: WalFlushView }> {
  const view = known ?? (await findWalFlushView(session))
  const [row] = await session.query<{ flushes: string; ms: string; write_ms: string }>(
    view === 'pg_stat_io'
      ? `select coalesce(sum(fsyncs), 0)::text as flushes, coalesce(sum(fsync_time), 0)::text as ms,
                coalesce(sum(write_time), 0)::text as write_ms from pg_stat_io where object = 'wal'`
      : `select wal_sync::text as flushes, wal_sync_time::text as ms, wal_write_time::text as write_ms from pg_stat_wal`,
  )
  return {
    flushes: Number(row?.flushes ?? 0),
    ms: Number(row?.ms ?? 0),
    writeMs: Number(row?.write_ms ?? 0),
    view,
  }
}

async function findWalFlushView(session: Session): Promise<WalFlushView> {
  const [setting] = await session.query<{ timing: string; io: boolean }>(
    `select current_setting('track_wal_io_timing') as timing,
          exists (select 1 from pg_attribute where attrelid = to_regclass('pg_catalog.pg_stat_io') and attname = 'fsync_time') as io`,
  )
  if (setting?.timing !== 'on') {
    throw new WalcostError(
      'UNSUPPORTED_SERVER',
      'the server does not time WAL flushes: SET track_wal_io_timing = on (superuser, or ALTER SYSTEM), let it run under load, then calibrate again.',
    )
  }
  // pg_stat_io exists from PostgreSQL 16 and counts WAL from 18; before 16 a query that names it
  // fails to parse, so it is asked about only where it exists.
  if (!setting.io) return 'pg_stat_wal'
  const [wal] = await session.query<{ io_wal: boolean }>(
    `select exists (select 1 from pg_stat_io where object = 'wal') as io_wal`,
  )
  return wal?.io_wal === true ? 'pg_stat_io' : 'pg_stat_wal'
}
