import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { GIN_TABLE, ginIngestCase, ginTableSetup, median } from '../support/gin-ingest.js'
import { timeWalFlushes } from '../support/wal-io-timing.js'

// A jsonb column under GIN, with the default pending list: the batch a user measures first stops
// short of the list's merge, says so with the batch that includes it, and the ceiling from that
// batch holds against a committed ingest of 60,000 rows into the same table.

describeOnPostgres('an ingest ceiling on a jsonb-under-GIN table', () => {
  let database: TestDatabase
  let resetTiming: () => Promise<void>
  beforeAll(async () => {
    resetTiming = await timeWalFlushes(inject('postgresUrl'))
    database = await openPostgresDatabase(inject('postgresUrl'))
    await database.exec(ginTableSetup(100_000))
  })
  afterAll(async () => {
    await database?.close()
    await resetTiming?.()
  })

  it('notes the merge a short batch leaves out, and the batch it names gives the bytes and the ceiling of a committed ingest', async () => {
    const gin = await ginIngestCase(database.url as string)
    console.log(
      JSON.stringify({
        suggested: gin.suggested,
        shortBytesPerRow: gin.short.bytesPerRow,
        shortMsPerRow: gin.short.timing.msPerRow,
        shortRatio: gin.shortRatio,
        rounds: gin.rounds.map(({ cost, plainMsPerRow, achieved, committedBytesPerRow, estimate, ratio }) => ({
          bytesPerRow: cost.bytesPerRow,
          fpiBytesPerRow: (cost.breakdown?.fpiBytes ?? 0) / cost.rows,
          committedBytesPerRow,
          msPerRow: cost.timing.msPerRow,
          plainMsPerRow,
          achieved,
          estimate,
          ratio,
        })),
      }),
    )
    // Both jsonb indexes' lists fill without a merge in 10,000 rows; the tags' index has none.
    expect(gin.notes).toHaveLength(2)
    for (const name of [`${GIN_TABLE}_body_idx`, `${GIN_TABLE}_body_path_idx`])
      expect(gin.notes.filter((note) => note.startsWith(`${name} `))).toHaveLength(1)
    expect(gin.suggested).toBeGreaterThan(10_000)
    for (const { cost } of gin.rounds) {
      // The batch the note names merges every list within it, and says nothing more of them.
      expect(cost.notes.filter((note) => note.includes('pending list'))).toEqual([])
      for (const name of [`${GIN_TABLE}_body_idx`, `${GIN_TABLE}_body_path_idx`]) {
        const types = cost.indexes.find((index) => index.name === name)?.recordTypes.map((entry) => entry.type)
        expect(types, name).toContain('Gin/DELETE_LISTPAGE')
      }
      // The merges' WAL is in its bytes: more a row than the short batch's.
      expect(cost.bytesPerRow ?? 0).toBeGreaterThan(gin.short.bytesPerRow ?? 0)
    }
    // What steady ingest writes a row is nearer the named batch's bytes than the short batch's (the
    // committed rows pay any image a checkpoint calls for besides, so it is not equal to either).
    const committed = median(gin.rounds.map((round) => round.committedBytesPerRow))
    const named = median(gin.rounds.map((round) => round.cost.bytesPerRow ?? 0))
    expect(Math.abs(named - committed)).toBeLessThan(Math.abs((gin.short.bytesPerRow ?? 0) - committed))
    // The target is within 25%, which npm run bench prints against, and misses on this
    // table (docs/benchmarks.md): one transaction of the named batch took 0.027-0.047 ms a row from
    // round to round, a plain COPY as much as walcost's measurement, where the committed ingest held
    // at 0.033-0.035 all in; medians of 0.63-1.03 seen. Held here: no gross error either way.
    expect(gin.ratio).toBeGreaterThanOrEqual(0.4)
    expect(gin.ratio).toBeLessThanOrEqual(1.75)
  }, 300_000)
})
