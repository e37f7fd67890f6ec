import { counted } from '../core/format.js'
import { MIB } from '../core/units.js'
import type { ServerFacts } from './server.js'

// shared_buffers is set in PostgreSQL's binary units: sizes set against it are written in them too.
const size = (bytes: number) =>
  bytes >= 1024 * MIB ? `${(bytes / 1024 / MIB).toFixed(1)} GB` : `${Math.round(bytes / MIB)} MB`

/**
 * One sentence for each server setting that changes what this measurement wrote, saying what it
 * does to it. `relationBytes`: the table and its indexes, to set against shared_buffers.
 */
export function configNotes(facts: ServerFacts, relationBytes: number): string[] {
  const notes: string[] = []
  notes.push(
    facts.fullPageWrites
      ? 'full_page_writes is on: the first change to each page after a checkpoint logs the whole page, which is why WAL jumps after checkpoints.'
      : 'full_page_writes is off: no full-page images were written, so these numbers are lower than on a safely configured server (off risks corruption after a crash on most storage).',
  )
  notes.push(
    facts.walCompression === 'off'
      ? 'wal_compression is off: full-page images are written uncompressed; pglz, lz4 or zstd would shrink them at some CPU cost.'
      : `wal_compression is ${facts.walCompression}: full-page images were compressed, so their bytes here are smaller than on a server without it.`,
  )
  if (facts.walLevel === 'logical')
    notes.push(
      'wal_level is logical: heap records keep their tuple data even beside a full-page image, and each commit is 12 bytes larger, for logical decoding.',
    )
  else if (facts.walLevel === 'minimal')
    notes.push(
      'wal_level is minimal: tables created or truncated in the same transaction are not WAL-logged at all, so such a batch writes almost nothing.',
    )
  else notes.push('wal_level is replica: the default; logical would add bytes for decoding.')
  if (facts.dataChecksums || facts.walLogHints) {
    notes.push(
      `${facts.dataChecksums ? 'data checksums are on' : 'wal_log_hints is on'}: setting hint bits on a page not yet changed since the checkpoint logs a full-page image (FPI_FOR_HINT), so even reads can write WAL.`,
    )
  }
  const checkpoints = facts.checkpoints
  const observed = checkpoints
    ? ` Before this measurement the server had counted ${counted(checkpoints.timed, 'timed checkpoint')} and ${counted(checkpoints.requested, 'requested one')}${checkpoints.since ? ` since ${checkpoints.since}` : ''} (requested: an explicit CHECKPOINT, walcost's own included, or WAL reaching max_wal_size; the counters do not tell which).`
    : ''
  notes.push(
    `checkpoint_timeout is ${facts.checkpointTimeout} and max_wal_size ${facts.maxWalSize}: a checkpoint comes after that long or after about ${size(facts.maxWalSizeBytes / 1.9)} of WAL, and every page changed after it costs a full-page image again.${observed}`,
  )
  notes.push(
    facts.synchronousCommit === 'off'
      ? 'synchronous_commit is off: commits do not wait for the WAL flush, so commit latency does not limit the rate (a crash can lose the last transactions).'
      : `synchronous_commit is ${facts.synchronousCommit}: every commit waits for its WAL to be flushed, so single-row transactions are bound by flush latency.`,
  )
  if (relationBytes > 0) {
    notes.push(
      relationBytes <= facts.sharedBuffersBytes
        ? `shared_buffers (${size(facts.sharedBuffersBytes)}) holds the table and its indexes (${size(relationBytes)}): pages stay dirty in memory between checkpoints.`
        : `the table and its indexes (${size(relationBytes)}) exceed shared_buffers (${size(facts.sharedBuffersBytes)}): pages are evicted and read back, and each first change after a checkpoint costs an image again.`,
    )
  }
  return notes
}
