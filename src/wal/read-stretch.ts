import { throwIfAborted, WalcostError } from '../core/errors.js'
import { formatLsn, type WalLayout, WalReader, type WalRecord } from '../decode/reader.js'
import {
  type ArchivePlan,
  checkSegmentStart,
  detailOf,
  type SegmentFile,
  segmentBytes,
  segmentName,
  unreadableFile,
  type WalGap,
} from './archive.js'
import { ObserveTally, type TallyState } from './observe-tally.js'

/** Consecutive segments of a plan, read by one reader after another: in this thread or a worker's. */
export interface StretchJob {
  plan: ArchivePlan
  /** Where in `plan.segments` (without the files left out) the stretch starts and ends. */
  files: SegmentFile[]
  /** Files left out (skipBad): a gap stands where they were. */
  left: string[]
  /** Only records that start in [from, to). */
  from: number
  to: number
  /** Its last file is the last of the reading: its WAL may end early (the segment being written). */
  endsReading: boolean
}

/** What a stretch held, and what its ends need to be joined to its neighbours'. */
export interface StretchResult {
  tally: TallyState
  /** The first record in range and the end of the last one; the bytes the records in range span. */
  startLsn: number | null
  endLsn: number | null
  bytes: number
  gaps: WalGap[]
  endOfWal: { lsn: string; file: string } | null
  /** The first record of the stretch's first file, in range or not, and the record it points back to. */
  firstRecord: { lsn: number; previous: number } | null
  /** Of the last reader: its last record, where that record ends, and a record it could not finish. */
  lastRecordLsn: number | null
  position: number
  unfinishedLsn: number | null
  /** The last reader stopped at the end of the WAL or at `to`: nothing after it is to be joined. */
  stopped: boolean
  filesRead: number
  bytesRead: number
}

export function layoutOf(plan: ArchivePlan): WalLayout {
  return { major: plan.major, blockSize: plan.blockSize, segmentSize: plan.segmentSize }
}

/**
 * Reads a stretch of consecutive segments into one tally. Each run of consecutive segment numbers is
 * one reader, from its first segment's first page (the rest of a record begun before it skipped);
 * a missing segment ends a run and starts the next. Every record's CRC is checked: a file is the one
 * place a damaged byte could hide.
 */
export async function readStretch(
  job: StretchJob,
  { signal, onFile }: { signal?: AbortSignal | undefined; onFile?: ((bytes: number) => void) | undefined } = {},
): Promise<StretchResult> {
  const { plan, files, from, to } = job
  const layout = layoutOf(plan)
  const { segmentSize } = layout
  const tally = new ObserveTally(layout, true)
  const left = new Set(job.left)
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
  const gaps: WalGap[] = []
  let reader: WalReader | null = null
  let first: WalReader | null = null
  let lastSegment = -1
  let endOfWal: StretchResult['endOfWal'] = null
  let stopped = false
  // Two buffers: the next segment is read (in libuv's threads) while this one is parsed.
  const buffers = [new Uint8Array(segmentSize), new Uint8Array(segmentSize)] as const
  const fetch = (i: number): Promise<Uint8Array> | null => {
    const file = files[i]
    if (!file) return null
    const reading = segmentBytes(file, buffers[i % 2] as Uint8Array)
    // Awaited in its turn; a reading that stops earlier must not leave its rejection unheld.
    reading.catch(() => undefined)
    return reading
  }
  let next = fetch(0)
  let bytesRead = 0
  let filesRead = 0
  try {
    for (const [i, file] of files.entries()) {
      throwIfAborted(signal)
      if (reader && file.segment !== lastSegment + 1) {
        if (!plan.gaps.some((gap) => gap.toLsn === formatLsn(file.segment * segmentSize)))
          gaps.push(leftOutGap(lastSegment + 1, file.segment, segmentSize, left, plan))
        reader = null
        endRun()
      }
      reader ??= new WalReader(
        { ...layout, verifyCrc: true, startsAtPage: true },
        file.segment * segmentSize,
        null,
        onRecord,
      )
      first ??= reader
      lastSegment = file.segment
      const bytesOfFile = await (next as Promise<Uint8Array>)
      next = fetch(i + 1)
      checkSegmentStart(file, bytesOfFile, plan)
      if (bytesOfFile.length !== segmentSize)
        throw unreadableFile(
          file.name,
          file.segment * segmentSize + bytesOfFile.length,
          `it has ${bytesOfFile.length} bytes where a segment has ${segmentSize}: it was cut short`,
        )
      const last = i === files.length - 1
      if ((last && job.endsReading) || file.partial) reader.stopAtEndOfWal()
      try {
        reader.push(bytesOfFile)
      } catch (error) {
        throw inFile(error, file, reader, segmentSize)
      }
      bytesRead += bytesOfFile.length
      filesRead += 1
      onFile?.(bytesOfFile.length)
      if (reader.endOfWal !== null) {
        const following = files[i + 1]
        if (!following) {
          if (job.endsReading) endOfWal = { lsn: formatLsn(reader.endOfWal), file: file.name }
          stopped = true
          break
        }
        // A .partial ends where its timeline did; the rest of the segment is the next timeline's
        // first segment, which is not among the files: a gap, and reading goes on after it.
        const switched = plan.switches.findIndex((entry) => entry.parent === file.timeline)
        const child = plan.switches[switched + 1]?.parent ?? plan.timeline
        gaps.push({
          fromLsn: formatLsn(reader.endOfWal),
          toLsn: formatLsn(following.segment * segmentSize),
          missing: [segmentName(child, file.segment, segmentSize)],
        })
        endRun()
        reader = null
        continue
      }
      if (reader.position >= to) {
        stopped = true
        break
      }
    }
  } finally {
    await next?.catch(() => undefined)
  }
  endRun()
  // The last file read to its end, and the next segment is one the server pre-allocated and has not
  // written: the WAL ends where the next record would have begun.
  const zeros = plan.preallocated
  if (job.endsReading && !stopped && endOfWal === null && reader && zeros?.segment === lastSegment + 1) {
    const end = reader.unfinishedRecordLsn ?? reader.position
    if (end < to) endOfWal = { lsn: formatLsn(end), file: zeros.name }
  }
  const firstLsn = first?.firstRecordLsn ?? null
  return {
    tally: tally.state(),
    startLsn,
    endLsn,
    bytes,
    gaps,
    endOfWal,
    firstRecord:
      firstLsn === null || first?.firstRecordPrevious == null
        ? null
        : { lsn: firstLsn, previous: first.firstRecordPrevious },
    lastRecordLsn: reader?.lastRecordLsn ?? null,
    position: reader?.position ?? 0,
    unfinishedLsn: reader?.unfinishedRecordLsn ?? null,
    stopped: stopped || reader === null,
    filesRead,
    bytesRead,
  }
}

/** A gap that skipBad made: the files left out stand where the WAL is missing. */
export function leftOutGap(
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

/**
 * A reader's WAL_UNREADABLE, with the file it came from and where. A record that began in an earlier
 * file fails in the file it ends in, though the damage may lie in either: the detail names both.
 */
export function inFile(error: unknown, file: SegmentFile, reader: WalReader, segmentSize: number): unknown {
  if (!(error instanceof WalcostError) || error.code !== 'WAL_UNREADABLE') return error
  const lsn = reader.failureLsn
  const began = Math.floor(lsn / segmentSize)
  const detail =
    began < file.segment
      ? `${detailOf(error)} (the record begins in ${segmentName(file.timeline, began, segmentSize)}: the damage may be in either file)`
      : detailOf(error)
  return unreadableFile(file.name, lsn, detail, error)
}
