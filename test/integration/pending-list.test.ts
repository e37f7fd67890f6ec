import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { estimateIngestCeiling, measureInsertCost } from '../../src/index.js'
import { backends, type TestDatabase } from '../support/backends.js'

// A jsonb column under GIN with fastupdate (the default): a batch that fills the pending list
// without merging it measured the cheap half of what steady ingest pays, and says so.

const SETUP = `create table events (id int8 primary key, payload jsonb not null);
  create index events_payload_idx on events using gin (payload) with (gin_pending_list_limit = 64);
  create index events_payload_big_idx on events using gin (payload jsonb_path_ops)`

describe.each(backends)('a GIN pending list on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  it('notes the index whose pending list the batch did not merge, with the rows a batch needs to include a merge', async () => {
    const cost = await measureInsertCost({
      db: test.db,
      table: 'events',
      sql: `insert into events select i, jsonb_build_object('kind', i % 50, 'tags', jsonb_build_array('a' || i % 7, 'b' || i % 11), 'n', i)
              from generate_series(1, 2000) i`,
      timingProbe: false,
    })
    const types = (name: string) =>
      cost.indexes.find((index) => index.name === name)?.recordTypes.map((entry) => entry.type) ?? []
    // 64 kB of pending list fills many times over in 2,000 rows: merged; the default 4 MB does not fill.
    expect(types('events_payload_idx')).toContain('Gin/DELETE_LISTPAGE')
    expect(types('events_payload_big_idx')).toContain('Gin/UPDATE_META_PAGE')
    expect(types('events_payload_big_idx')).not.toContain('Gin/DELETE_LISTPAGE')
    const notes = cost.notes.filter((note) => note.includes('pending list'))
    expect(notes).toHaveLength(1)
    expect(notes[0]).toContain('events_payload_big_idx')
    expect(notes[0]).toContain('4,096 kB')
    const suggested = Number(/at least ([\d,]+) rows/.exec(notes[0] ?? '')?.[1]?.replaceAll(',', ''))
    expect(suggested).toBeGreaterThan(2_000)
    // A ceiling from it repeats the warning.
    const ceiling = estimateIngestCeiling(cost, { storage: 'nvme', rowsPerCommit: 100 })
    expect(ceiling.assumptions.filter((line) => line.includes('events_payload_big_idx'))).toHaveLength(1)
  })
})
