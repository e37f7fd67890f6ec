import { describe, expect, it } from 'vitest'
import { configNotes } from '../../src/wal/notes.js'
import { insertCost } from './fixtures.js'

describe('configNotes', () => {
  const checkpointNote = (checkpoints: { timed: number; requested: number; since: string | null }) =>
    configNotes({ ...insertCost.server, checkpoints }, 0).find((note) => note.startsWith('checkpoint_timeout'))

  it('counts checkpoints as of before the measurement, and does not guess why they were requested', () => {
    const note = checkpointNote({ timed: 0, requested: 1, since: null })
    expect(note).toContain('Before this measurement the server had counted 0 timed checkpoints and 1 requested one')
    expect(note).toContain('the counters do not tell which')
    expect(note).not.toMatch(/forced by WAL volume, so/)
  })

  it('says which setting each note is about, in the units PostgreSQL uses for it', () => {
    const notes = configNotes(insertCost.server, insertCost.server.sharedBuffersBytes * 2)
    expect(notes.some((note) => note.startsWith('full_page_writes is'))).toBe(true)
    expect(notes.at(-1)).toMatch(/exceed shared_buffers \(\d+ MB\)/)
  })
})
