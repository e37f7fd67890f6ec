import pg from 'pg'

/**
 * Turns on track_wal_io_timing, which calibrateStorage and calibrateIngest read WAL flush times
 * from, for the whole server; the function it returns resets it.
 */
export async function timeWalFlushes(url: string): Promise<() => Promise<void>> {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  try {
    await admin.query('alter system set track_wal_io_timing = on')
    await admin.query('select pg_reload_conf()')
  } catch (error) {
    await admin.end()
    throw error
  }
  return async () => {
    try {
      await admin.query('alter system reset track_wal_io_timing')
      await admin.query('select pg_reload_conf()')
    } finally {
      await admin.end()
    }
  }
}
