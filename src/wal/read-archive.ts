import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { BYTES_A_WORKER, MAX_INSPECT_WORKERS } from '../core/defaults.js'
import { abortedError, WalcostError, type WalcostErrorCode } from '../core/errors.js'
import { XLOG_LONG_PAGE_HEADER, XLOG_SHORT_PAGE_HEADER } from '../core/units.js'
import { formatLsn, WalReader, type WalRecord } from '../decode/reader.js'
import {
  type ArchivePlan,
  type BadFile,
  detailOf,
  type SegmentFile,
  segmentBytes,
  unreadableFile,
  type WalGap,
} from './archive.js'
import { ObserveTally, type WindowWal } from './observe-tally.js'
import { inFile, layoutOf, leftOutGap, readStretch, type StretchJob, type StretchResult } from './read-stretch.js'

export interface ArchiveReadOptions {
  /** Only records that start at or after this LSN, and before `to`. */
  from: number | null
  to: number | null
  /** A file that does not read is reported and left out (a gap) instead of failing the reading. */
  skipBad: boolean
  /** Worker threads reading stretches of segments at once; 1 reads in this thread; undefined: by the WAL's size and the cores. */
  parallel: number | undefined
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
 * Reads the planned segments in LSN order into one tally: split into stretches of consecutive
 * segments read at once by worker threads (read-stretch.ts), then joined in order, the record that
 * crosses from one stretch into the next read here and every join checked (the xl_prev chain). With
 * `skipBad`, a file that fails is left out and the reading starts again without it, so that nothing
 * it held before the damage is counted either.
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
      bad.push({ name: file, lsn: (error as WalcostError).lsn ?? null, reason: detailOf(error as WalcostError) })
    }
  }
}

async function readOnce(
  plan: ArchivePlan,
  options: ArchiveReadOptions,
  left: ReadonlySet<string>,
): Promise<Omit<ArchiveReading, 'bad'>> {
  const { segmentSize } = plan
  const from = options.from ?? 0
  const to = options.to ?? Number.POSITIVE_INFINITY
  const segments = plan.segments.filter(
    (file) => !left.has(file.name) && (file.segment + 1) * segmentSize > from && file.segment * segmentSize < to,
  )
  const count = Math.max(
    1,
    Math.min(
      segments.length,
      options.parallel ??
        Math.min(
          availableParallelism(),
          MAX_INSPECT_WORKERS,
          Math.floor((segments.length * segmentSize) / BYTES_A_WORKER),
        ),
    ),
  )
  // Each stretch starts where a record starts: a boundary on a segment that a record longer than
  // it covers whole (a large logical message) moves on to the first segment where one starts.
  const starts = [0]
  for (let i = 1; i < count; i++) {
    let at = Math.max(Math.floor((i * segments.length) / count), (starts.at(-1) as number) + 1)
    while (at < segments.length && !(await recordStartsIn(segments[at] as SegmentFile, segments[at - 1], plan))) at++
    if (at < segments.length) starts.push(at)
  }
  const jobs: StretchJob[] = starts.map((start, i) => ({
    plan,
    files: segments.slice(start, starts[i + 1] ?? segments.length),
    left: [...left],
    from,
    to,
    endsReading: i === starts.length - 1,
  }))
  let bytesDone = 0
  let filesDone = 0
  const progress = (bytes: number, files: number) => {
    bytesDone += bytes
    filesDone += files
    options.onProgress?.({ files: segments.length, filesDone, bytesDone })
  }
  const results =
    jobs.length === 1
      ? [await readStretch(jobs[0] as StretchJob, { signal: options.signal, onFile: (bytes) => progress(bytes, 1) })]
      : await Promise.all(
          jobs.map(async (job) => {
            const result = await inWorker(job, options.signal)
            progress(result.bytesRead, result.filesRead)
            return result
          }),
        )
  return await joined(plan, jobs, results, from, to, left)
}

/** The stretches' tallies in order, each join read and checked. */
async function joined(
  plan: ArchivePlan,
  jobs: readonly StretchJob[],
  results: readonly StretchResult[],
  from: number,
  to: number,
  left: ReadonlySet<string>,
): Promise<Omit<ArchiveReading, 'bad'>> {
  const layout = layoutOf(plan)
  const tally = new ObserveTally(layout)
  const reading = { startLsn: null as number | null, endLsn: null as number | null, bytes: 0 }
  const add = (startLsn: number | null, endLsn: number | null, bytes: number) => {
    reading.startLsn ??= startLsn
    reading.endLsn = endLsn ?? reading.endLsn
    reading.bytes += bytes
  }
  const gaps: WalGap[] = [...plan.gaps]
  for (const [i, result] of results.entries()) {
    const before = results[i - 1]
    const first = jobs[i]?.files[0] as SegmentFile
    const last = jobs[i - 1]?.files.at(-1)
    if (before && last && !before.stopped) {
      if (first.segment !== last.segment + 1) {
        if (!plan.gaps.some((gap) => gap.toLsn === formatLsn(first.segment * plan.segmentSize)))
          gaps.push(leftOutGap(last.segment + 1, first.segment, plan.segmentSize, left, plan))
      } else {
        if (!result.firstRecord)
          throw unreadableFile(first.name, first.segment * plan.segmentSize, 'no record starts in it or after it')
        // The record just before the join: the last one of the stretch before, or the one that
        // crosses into this stretch, read here.
        let previous = before.lastRecordLsn
        let joinedAt = before.position
        let beforeInRange = before.endLsn === before.position
        if (before.unfinishedLsn !== null) {
          beforeInRange = false
          const began = Math.floor(before.unfinishedLsn / plan.segmentSize)
          const crossed = [...(jobs[i - 1] as StretchJob).files.filter((file) => file.segment >= began), first]
          previous = await readCrossing(plan, crossed, before, result.firstRecord.lsn, (record) => {
            joinedAt = record.lsn + record.footprint
            if (record.lsn < from || record.lsn >= to) return
            beforeInRange = true
            add(record.lsn, joinedAt, record.footprint)
            tally.onRecord(record)
          })
        }
        // Between the two, at most the header of the page the stretch begins with.
        const header = joinedAt % plan.segmentSize === 0 ? XLOG_LONG_PAGE_HEADER : XLOG_SHORT_PAGE_HEADER
        const between = result.firstRecord.lsn - joinedAt
        if (
          (between !== 0 && !(joinedAt % plan.blockSize === 0 && between === header)) ||
          result.firstRecord.previous !== previous
        )
          throw unreadableFile(
            first.name,
            result.firstRecord.lsn,
            `its first record points back to ${formatLsn(result.firstRecord.previous)}, not to the record before it at ${formatLsn(previous ?? 0)}`,
          )
        if (beforeInRange && result.startLsn === result.firstRecord.lsn) reading.bytes += between
      }
    }
    tally.absorb(result.tally)
    add(result.startLsn, result.endLsn, result.bytes)
    gaps.push(...result.gaps)
  }
  const lastResult = results.at(-1) as StretchResult
  const lastFile = jobs.at(-1)?.files.at(-1)
  return {
    wal: tally.summary(reading.bytes),
    ...reading,
    gaps,
    endOfWal: lastResult.endOfWal,
    unfinished:
      lastResult.unfinishedLsn !== null && lastResult.unfinishedLsn < to && lastFile && !lastResult.endOfWal
        ? { lsn: formatLsn(lastResult.unfinishedLsn), file: lastFile.name }
        : null,
    filesRead: results.reduce((sum, result) => sum + result.filesRead, 0),
  }
}

/**
 * The record that begins at the end of one stretch and ends in the next, read from the files it
 * spans (from the one it begins in to the next stretch's first): checked as any other (its CRC,
 * and that it points back to the stretch's last record). Returns where it starts.
 */
async function readCrossing(
  plan: ArchivePlan,
  files: readonly SegmentFile[],
  before: StretchResult,
  next: number,
  onRecord: (record: WalRecord) => void,
): Promise<number> {
  const start = before.unfinishedLsn as number
  const reader = new WalReader(
    { ...layoutOf(plan), verifyCrc: true, previous: before.lastRecordLsn },
    start,
    next,
    onRecord,
  )
  const buffer = new Uint8Array(plan.segmentSize)
  for (const file of files) {
    const bytes = await segmentBytes(file, buffer)
    const offset = Math.max(0, reader.readFrom - file.segment * plan.segmentSize)
    try {
      reader.push(bytes.subarray(offset))
      if (file === files.at(-1)) reader.finish()
    } catch (error) {
      throw inFile(error, file, reader, plan.segmentSize)
    }
  }
  return start
}

/** xlp_info's flag: the page begins with the rest of a record begun on an earlier page. */
const XLP_FIRST_IS_CONTRECORD = 0x0001

/**
 * Whether a record begins in `file`: not where the segment before it is its predecessor and the
 * rest of a record begun there (xlp_rem_len of the first page's header) fills it to its end. The
 * rest is laid over the pages after their headers; the next record begins at the 8-byte boundary
 * after it. A file that does not read says so when its stretch reads it.
 */
async function recordStartsIn(file: SegmentFile, before: SegmentFile | undefined, plan: ArchivePlan): Promise<boolean> {
  if (!before || before.segment !== file.segment - 1) return true
  let bytes: Uint8Array
  try {
    // The first page is enough; a compressed file is decompressed whole.
    bytes = await segmentBytes(file, new Uint8Array(file.codec === null ? plan.blockSize : plan.segmentSize))
  } catch {
    return true
  }
  if (bytes.length < XLOG_LONG_PAGE_HEADER) return true
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if ((view.getUint16(2, true) & XLP_FIRST_IS_CONTRECORD) === 0) return true
  let remaining = view.getUint32(16, true)
  let offset = XLOG_LONG_PAGE_HEADER
  for (;;) {
    const pageEnd = (Math.floor(offset / plan.blockSize) + 1) * plan.blockSize
    if (remaining <= pageEnd - offset) return Math.ceil((offset + remaining) / 8) * 8 < plan.segmentSize
    remaining -= pageEnd - offset
    offset = pageEnd + XLOG_SHORT_PAGE_HEADER
    if (pageEnd >= plan.segmentSize) return false
  }
}

/**
 * One stretch read by a worker thread. A worker that cannot start (no worker threads where this
 * runs, or the worker's file not beside this one) leaves the stretch to this thread.
 */
function inWorker(job: StretchJob, signal: AbortSignal | undefined): Promise<StretchResult> {
  const source = import.meta.url.endsWith('.ts')
  let worker: Worker
  try {
    worker = new Worker(new URL(source ? './archive-worker.ts' : './archive-worker.js', import.meta.url), {
      workerData: job,
      // Run from the sources (the tests), the worker's TypeScript needs tsx, as the tests do.
      execArgv: source ? ['--import', 'tsx'] : [],
    })
  } catch {
    return readStretch(job, { signal })
  }
  return new Promise<StretchResult>((resolve, reject) => {
    let settled = false
    const abort = () => {
      void worker.terminate()
      settle(() => reject(abortedError(signal?.reason)))
    }
    const settle = (finish: () => void) => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', abort)
      finish()
    }
    signal?.addEventListener('abort', abort, { once: true })
    worker.once(
      'message',
      (message: {
        result?: StretchResult
        failure?: { code: WalcostErrorCode | null; message: string; file?: string; lsn?: string }
      }) => {
        void worker.terminate()
        const { result, failure } = message
        if (result) settle(() => resolve(result))
        else if (failure?.code)
          settle(() =>
            reject(
              new WalcostError(failure.code as WalcostErrorCode, failure.message, {
                ...(failure.file === undefined ? {} : { file: failure.file }),
                ...(failure.lsn === undefined ? {} : { lsn: failure.lsn }),
              }),
            ),
          )
        else settle(() => reject(new Error(failure?.message ?? 'the worker reading WAL failed')))
      },
    )
    // The worker did not start or died: this thread reads the stretch instead.
    worker.once('error', () => settle(() => readStretch(job, { signal }).then(resolve, reject)))
    worker.once('exit', () => settle(() => readStretch(job, { signal }).then(resolve, reject)))
  })
}
