import { MemoryFS, PGlite } from '@electric-sql/pglite'
import { describe, expect, it } from 'vitest'
import { openCopy, readDataDir } from '../../src/driver/pglite-template.js'

// walcost's embedded copies are written straight into a new instance's memory, through PGlite
// 0.5.17's internals (MemoryFS.init's preRun, the resume path): a copy made so must write the same
// WAL as one made by PGlite's own loadDataDir, so that an upgrade that changes them fails here.

const pglite = { PGlite, MemoryFS }

/** The same batch on a copy: a table, then 1,000 rows in a transaction of their own. */
async function walOfBatch(db: PGlite): Promise<{ start: string; end: string; bytes: Uint8Array }> {
  const lsn = async () =>
    (await db.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')).rows[0]?.lsn as string
  const start = await lsn()
  await db.exec('create table t (id int8 primary key, v text not null); create index t_v on t (v)')
  await db.exec(`begin; insert into t select i, md5(i::text) from generate_series(1, 1000) i; commit`)
  const end = await lsn()
  // Both ends in the segment the copy started in (the batch writes well under 16 MiB).
  const [at] = (
    await db.query<{ dir: string; file: string; from: number; to: number }>(
      `select current_setting('data_directory') as dir, (pg_walfile_name_offset($1::pg_lsn)).file_name as file,
              (pg_walfile_name_offset($1::pg_lsn)).file_offset as from, (pg_walfile_name_offset($2::pg_lsn)).file_offset as to`,
      [start, end],
    )
  ).rows
  if (!at) throw new Error('no WAL position')
  const fs = (db as unknown as { Module: { FS: { readFile(path: string): Uint8Array } } }).Module.FS
  const segment = fs.readFile(`${at.dir}/pg_wal/${at.file}`)
  return { start, end, bytes: segment.slice(Number(at.from), Number(at.to)) }
}

describe('a copy of an embedded database, written into a new instance', () => {
  it('writes the same WAL as a copy by loadDataDir, but for its commit times and their CRCs', async () => {
    const source = await PGlite.create({ postgresqlconf: ["shared_buffers = '16MB'"] })
    await source.exec('create table before (id int8 primary key); insert into before select generate_series(1, 5000)')
    const files = await readDataDir(source)
    const dumped = await source.dumpDataDir('none')
    await source.close()
    // Only the segment that holds the insert position: none pre-allocated past it.
    const segments = files.entries.filter((entry) => /^pg_wal\/[0-9A-F]{24}$/.test(entry.path))
    expect(segments).toHaveLength(1)

    const fast = await openCopy(pglite, files)
    const loaded = await PGlite.create({ loadDataDir: dumped })
    try {
      const [ours, theirs] = [await walOfBatch(fast), await walOfBatch(loaded)]
      expect(ours.start).toBe(theirs.start)
      expect(ours.end).toBe(theirs.end)
      expect(ours.bytes.length).toBe(theirs.bytes.length)
      expect(ours.bytes.length).toBeGreaterThan(50_000)
      // Two commits (the table's and the rows'): each a timestamp of 8 bytes and a CRC of 4.
      let differing = 0
      for (let i = 0; i < ours.bytes.length; i++) if (ours.bytes[i] !== theirs.bytes[i]) differing++
      expect(differing).toBeGreaterThan(0)
      expect(differing).toBeLessThanOrEqual(2 * 12)
      // The copy is a database of its own: what it wrote is not in the other.
      expect((await fast.query('select count(*)::int as n from before')).rows).toEqual([{ n: 5000 }])
    } finally {
      await fast.close()
      await loaded.close()
    }
  })
})
