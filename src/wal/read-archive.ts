import { throwIfAborted, WalcostError } from '../core/errors.js'
import { formatLsn, WalReader, type WalRecord } from '../decode/reader.js'
import {
  type ArchivePlan,
  type BadFile,
  detailOf,
  type SegmentFile,
  segmentBytes,
  segmentName,
  unreadableFile,
  type WalGap,
} from './archive.js'
import { ObserveTally, type WindowWal } from './observe-tally.js'

export interface ArchiveReadOptions {
  /** Only records that start at or after this LSN, and before `to`. */
  from: number | null
  to: number | null
  /** A file that does not read is reported and left out (a gap) instead of failing the reading. */
  skipBad: boolean
  signal?: AbortSignal | undefined
  onProgress?: ((progress: ArchiveProgress) => void) | undefined
}

export interface ArchiveProgress {
  files: number
  filesDone: number
  bytesDone: number
}

/** What the files held, as far as they were read. */
export interface ArchiveReading {
  wal: WindowWal
  /** The first record read, and the end of the last: null when no record lay in the range. */
  startLsn: number | null
  endLsn: number | null
  /** The bytes the records read span, the gaps left out: what `wal` adds up to. */
  bytes: number
  gaps: WalGap[]
  bad: BadFile[]
  /** The newest file's WAL ended before the file did (the segment the server was writing). */
  endOfWal: { lsn: string; file: string } | null
  /** A record that began in the last file read and goes on past it: not counted. */
  unfinished: { lsn: string; file: string } | null
  filesRead: number
}

/**
 * Reads the planned segments in LSN order into one tally. Each run of consecutive segments is one
 * reader, from its first segment's first page (the rest of a record begun before it skipped);
 * a missing segment ends a run and starts the next. Every record's CRC is checked: a file is the
 * one place a damaged byte could hide. With `skipBad`, a file that fails is left out and the reading
 * starts again without it, so that nothing it held before the damage is counted either.
 */
export async function readArchive(plan: ArchivePlan, options: ArchiveReadOptions): Promise<ArchiveReading> {
  const bad: BadFile[] = [...plan.bad]
  const left = new Set<string>()
  for (;;) {
    try {
      const reading = await readOnce(plan, options, left)
      return { ...reading, bad }
    } catch (error) {
      const file = error instanceof WalcostError && error.code === 'WAL_UNREADABLE' ? error.file : undefined
      if (!options.skipBad || file === undefined || left.has(file)) throw error
      left.add(file)
      bad.push({ name: file, lsn: (error as WalcostError).lsn ?? null, reason: (error as Error).message })
    }
  }
}

interface Run {
  reader: WalReader
  lastSegment: number
}

async function readOnce(
  plan: ArchivePlan,
  options: ArchiveReadOptions,
  left: ReadonlySet<string>,
): Promise<Omit<ArchiveReading, 'bad'>> {
  const { segmentSize, blockSize, major } = plan
  const layout = { major, blockSize, segmentSize }
  const tally = new ObserveTally(layout)
  const from = options.from ?? 0
  const to = options.to ?? Number.POSITIVE_INFINITY
  const segments = plan.segments.filter(
    (file) => !left.has(file.name) && (file.segment + 1) * segmentSize > from && file.segment * segmentSize < to,
  )
  let runFirst: number | null = null
  let runEnd = 0
  let startLsn: number | null = null
  let endLsn: number | null = null
  let bytes = 0
  const onRecord = (record: WalRecord) => {
    if (record.lsn < from || record.lsn >= to) return
    runFirst ??= record.lsn
    runEnd = record.lsn + record.footprint
    tally.onRecord(record)
  }
  const endRun = () => {
    if (runFirst === null) return
    startLsn ??= runFirst
    endLsn = runEnd
    bytes += runEnd - runFirst
    runFirst = null
  }
  const gaps: WalGap[] = [...plan.gaps]
  let run: Run | null = null
  let current: SegmentFile | null = null
  let endOfWal: ArchiveReading['endOfWal'] = null
  // Two buffers: the next segment is read (in libuv's threads) while this one is parsed.
  const buffers = [new Uint8Array(segmentSize), new Uint8Array(segmentSize)] as const
  const fetch = (i: number): Promise<Uint8Array> | null => {
    const file = segments[i]
    if (!file) return null
    const reading = segmentBytes(file, buffers[i % 2] as Uint8Array)
    // Awaited in its turn; a reading that stops earlier must not leave its rejection unheld.
    reading.catch(() => undefined)
    return reading
  }
  let next = fetch(0)
  let bytesDone = 0
  let filesDone = 0
  try {
    for (const [i, file] of segments.entries()) {
      throwIfAborted(options.signal)
      if (run && file.segment !== run.lastSegment + 1) {
        if (!plan.gaps.some((gap) => gap.toLsn === formatLsn(file.segment * segmentSize)))
          gaps.push(leftOutGap(run.lastSegment + 1, file.segment, segmentSize, left, plan))
        run = null
        endRun()
      }
      const reader: WalReader =
        run?.reader ??
        new WalReader({ ...layout, verifyCrc: true, startsAtPage: true }, file.segment * segmentSize, null, onRecord)
      run = { reader, lastSegment: file.segment }
      current = file
      const bytesOfFile = await (next as Promise<Uint8Array>)
      next = fetch(i + 1)
      if (bytesOfFile.length !== segmentSize)
        throw unreadableFile(
          file.name,
          file.segment * segmentSize + bytesOfFile.length,
          `it has ${bytesOfFile.length} bytes where a segment has ${segmentSize}: it was cut short`,
        )
      const last = i === segments.length - 1
      if (last || file.partial) reader.stopAtEndOfWal()
      try {
        reader.push(bytesOfFile)
      } catch (error) {
        throw inFile(error, file, reader)
      }
      bytesDone += bytesOfFile.length
      filesDone += 1
      options.onProgress?.({ files: segments.length, filesDone, bytesDone })
      if (reader.endOfWal !== null) {
        const next = segments[i + 1]
        if (!next) {
          endOfWal = { lsn: formatLsn(reader.endOfWal), file: file.name }
          break
        }
        // A .partial ends where its timeline did; the rest of the segment is the next timeline's
        // first segment, which is not among the files: a gap, and reading goes on after it.
        const switched = plan.switches.findIndex((entry) => entry.parent === file.timeline)
        const child = plan.switches[switched + 1]?.parent ?? plan.timeline
        gaps.push({
          fromLsn: formatLsn(reader.endOfWal),
          toLsn: formatLsn(next.segment * segmentSize),
          missing: [segmentName(child, file.segment, segmentSize)],
        })
        endRun()
        run = null
        continue
      }
      if (reader.position >= to) break
    }
  } finally {
    await next?.catch(() => undefined)
  }
  const unfinishedLsn = run?.reader.unfinishedRecordLsn ?? null
  endRun()
  return {
    wal: tally.summary(bytes),
    startLsn,
    endLsn,
    bytes,
    gaps,
    endOfWal,
    unfinished:
      unfinishedLsn !== null && unfinishedLsn < to && current
        ? { lsn: formatLsn(unfinishedLsn), file: current.name }
        : null,
    filesRead: filesDone,
  }
}

/** A gap that --skip-bad made: the files left out stand where the WAL is missing. */
function leftOutGap(
  fromSegment: number,
  toSegment: number,
  segmentSize: number,
  left: ReadonlySet<string>,
  plan: ArchivePlan,
): WalGap {
  const missing = plan.segments
    .filter((file) => left.has(file.name) && file.segment >= fromSegment && file.segment < toSegment)
    .map((file) => file.name)
  return { fromLsn: formatLsn(fromSegment * segmentSize), toLsn: formatLsn(toSegment * segmentSize), missing }
}

/** A reader's WAL_UNREADABLE, with the file it came from and where. */
function inFile(error: unknown, file: SegmentFile, reader: WalReader): unknown {
  if (!(error instanceof WalcostError) || error.code !== 'WAL_UNREADABLE') return error
  return unreadableFile(file.name, reader.failureLsn, detailOf(error), error)
}
