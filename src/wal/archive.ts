// WAL segment files as archives and copies of pg_wal hold them: plain or gzip'd, `.partial`, on
// one or more timelines (history files), named by timeline, log and segment (wal-traffic.md).
import { createReadStream } from 'node:fs'
import { open, readdir, readFile, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { promisify } from 'node:util'
import { createGunzip, gunzip } from 'node:zlib'
import { WalcostError } from '../core/errors.js'
import { XLOG_LONG_PAGE_HEADER } from '../core/units.js'
import { formatLsn, PAGE_MAGIC } from '../decode/reader.js'

const gunzipped = promisify(gunzip)
const SEGMENT_NAME = /^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})(\.partial)?(\.gz)?$/
const HISTORY_NAME = /^([0-9A-F]{8})\.history(\.gz)?$/
const XLP_LONG_HEADER = 0x0002
const MAJOR_OF_MAGIC = new Map(Object.entries(PAGE_MAGIC).map(([major, magic]) => [magic, Number(major)]))

/** One segment file and what its name and first page say. */
export interface SegmentFile {
  path: string
  /** The file's name without its folder. */
  name: string
  timeline: number
  /** Its segment number: its first byte's LSN over the segment size. */
  segment: number
  partial: boolean
  gzip: boolean
  major: number
  systemId: bigint
}

/** A timeline switch, from a history file: `parent` was followed up to `switchLsn`. */
export interface TimelineSwitch {
  parent: number
  switchLsn: number
}

/** Segments missing from a range: the WAL between is not read. */
export interface WalGap {
  fromLsn: string
  toLsn: string
  /** The segment names expected there, on the timeline that should hold them. */
  missing: string[]
}

/** A file given or found that is not read, and why. */
export interface SkippedFile {
  name: string
  reason: string
}

/** The segments to read, in LSN order, one a segment number, with what the folder told. */
export interface ArchivePlan {
  segments: SegmentFile[]
  major: number
  blockSize: number
  segmentSize: number
  /** The newest timeline, whose history is followed. */
  timeline: number
  switches: TimelineSwitch[]
  gaps: WalGap[]
  skipped: SkippedFile[]
  /** Files left out with skipBad because their first page did not read. */
  bad: BadFile[]
}

/** A file left out with skipBad: why, and where. */
export interface BadFile extends SkippedFile {
  lsn: string | null
}

const inputError = (message: string, cause?: unknown) =>
  new WalcostError('INVALID_OPTIONS', message, cause === undefined ? {} : { cause })

/** A segment's name as the server makes it. */
export function segmentName(timeline: number, segment: number, segmentSize: number): string {
  const perLog = 2 ** 32 / segmentSize
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(8, '0')
  return `${hex(timeline)}${hex(Math.floor(segment / perLog))}${hex(segment % perLog)}`
}

/** The files to read, from the paths given: folders are listed, files taken as they are. */
async function listed(paths: readonly string[]): Promise<{ segments: string[]; histories: string[]; other: string[] }> {
  const found = { segments: [] as string[], histories: [] as string[], other: [] as string[] }
  for (const path of paths) {
    const info = await stat(path).catch((error: unknown) => {
      throw inputError(`${path}: no such file or folder; give WAL segment files or a folder that holds them.`, error)
    })
    const names = info.isDirectory() ? (await readdir(path)).sort().map((name) => join(path, name)) : [path]
    for (const file of names) {
      const name = basename(file)
      if (SEGMENT_NAME.test(name)) found.segments.push(file)
      else if (HISTORY_NAME.test(name)) found.histories.push(file)
      else if (!info.isDirectory()) found.other.push(file)
    }
  }
  return found
}

/** The first bytes of a file, through gunzip for a `.gz`. */
async function headOf(path: string, gzip: boolean, length: number): Promise<Uint8Array> {
  if (!gzip) {
    const handle = await open(path, 'r')
    try {
      const buffer = new Uint8Array(length)
      const { bytesRead } = await handle.read(buffer, 0, length, 0)
      return buffer.subarray(0, bytesRead)
    } finally {
      await handle.close()
    }
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let have = 0
    const source = createReadStream(path)
    const inflate = createGunzip()
    const done = (error: unknown, bytes?: Uint8Array) => {
      source.destroy()
      inflate.destroy()
      if (bytes) resolve(bytes)
      else reject(error)
    }
    inflate.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      have += chunk.length
      if (have >= length) done(null, Buffer.concat(chunks).subarray(0, length))
    })
    inflate.on('end', () => done(null, Buffer.concat(chunks)))
    inflate.on('error', (error) => done(error))
    source.on('error', (error) => done(error))
    source.pipe(inflate)
  })
}

interface LongHeader {
  major: number
  address: number
  systemId: bigint
  segmentSize: number
  blockSize: number
}

function longHeader(path: string, bytes: Uint8Array): LongHeader {
  const name = basename(path)
  if (bytes.length < XLOG_LONG_PAGE_HEADER)
    throw unreadableFile(name, 0, `it has ${bytes.length} bytes, less than a segment's first page header`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const magic = view.getUint16(0, true)
  const major = MAJOR_OF_MAGIC.get(magic)
  if (major === undefined)
    throw unreadableFile(
      name,
      0,
      `its first page has magic 0x${magic.toString(16)}, which is no WAL of PostgreSQL 14 to 18 (not a WAL segment, or another version's)`,
    )
  if ((view.getUint16(2, true) & XLP_LONG_HEADER) === 0)
    throw unreadableFile(name, 0, 'its first page has no long header: it is not the start of a segment')
  return {
    major,
    address: view.getUint32(8, true) + view.getUint32(12, true) * 2 ** 32,
    systemId: view.getBigUint64(24, true),
    segmentSize: view.getUint32(32, true),
    blockSize: view.getUint32(36, true),
  }
}

/** What a WAL_UNREADABLE of a file says, without the file's name and the advice around it. */
export function detailOf(error: WalcostError): string {
  return error.message
    .replace(/^the WAL could not be read back: /, '')
    .replace(/^\S+( at [0-9A-F]+\/[0-9A-F]+)?: /, '')
    .replace(/\. Nothing was reported.*$/s, '')
}

/** WAL_UNREADABLE for a file, at an LSN (or its start). */
export function unreadableFile(name: string, lsn: number | null, detail: string, cause?: unknown): WalcostError {
  return new WalcostError(
    'WAL_UNREADABLE',
    `${name}${lsn === null ? '' : ` at ${formatLsn(lsn)}`}: ${detail}. Nothing was reported from it; pass --skip-bad (skipBad: true) to report the rest without it.`,
    { ...(cause === undefined ? {} : { cause }), file: name, ...(lsn === null ? {} : { lsn: formatLsn(lsn) }) },
  )
}

function parseHistory(text: string, name: string): TimelineSwitch[] {
  const switches: TimelineSwitch[] = []
  for (const line of text.split('\n')) {
    const trimmed = line.trim()
    if (trimmed === '' || trimmed.startsWith('#')) continue
    const match = /^(\d+)\s+([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})/.exec(trimmed)
    if (!match) throw inputError(`${name}: the line "${trimmed}" is not "timeline<TAB>LSN": is it a history file?`)
    switches.push({
      parent: Number(match[1]),
      switchLsn: Number.parseInt(match[2] as string, 16) * 2 ** 32 + Number.parseInt(match[3] as string, 16),
    })
  }
  return switches
}

/**
 * The segments to read from files and folders: named, their first pages read (the major from the
 * page magic, the segment and page sizes from the long header), one file a segment along the
 * newest timeline's history, gaps found. Mixed majors or clusters are refused with the files named.
 */
export async function planArchive(paths: readonly string[], { skipBad = false } = {}): Promise<ArchivePlan> {
  const found = await listed(paths)
  const skipped: SkippedFile[] = found.other.map((path) => ({
    name: basename(path),
    reason: 'not named as a WAL segment (24 hex digits, optionally .partial and .gz)',
  }))
  if (found.segments.length === 0)
    throw inputError(
      `no WAL segment files in ${paths.join(', ')}: segment names are 24 hex digits (000000010000000000000001), optionally with .partial or .gz.`,
    )
  const files = await Promise.all(
    found.segments.map(async (path) => {
      const name = basename(path)
      const [, timeline, log, seg, partial, gzip] = SEGMENT_NAME.exec(name) as RegExpExecArray
      const header = await headOf(path, gzip !== undefined, XLOG_LONG_PAGE_HEADER).then(
        (bytes) => longHeader(path, bytes),
        (error: unknown) => unreadableFile(name, null, `it could not be read (${(error as Error).message})`, error),
      )
      return {
        path,
        name,
        timeline: Number.parseInt(timeline as string, 16),
        log: Number.parseInt(log as string, 16),
        seg: Number.parseInt(seg as string, 16),
        partial: partial !== undefined,
        gzip: gzip !== undefined,
        header,
      }
    }),
  )
  // What most files say decides what the others are: WAL of one cluster, one major, one layout.
  const kinds = new Map<string, number>()
  const kindOf = (header: LongHeader) => `${header.major}/${header.systemId}/${header.segmentSize}/${header.blockSize}`
  for (const file of files)
    if (!(file.header instanceof WalcostError))
      kinds.set(kindOf(file.header), (kinds.get(kindOf(file.header)) ?? 0) + 1)
  const majority = [...kinds].sort((a, b) => b[1] - a[1])[0]?.[0]
  const usual = files.find((file) => !(file.header instanceof WalcostError) && kindOf(file.header) === majority)
  const usualHeader = usual?.header as LongHeader | undefined
  const segmentSize = usualHeader?.segmentSize ?? 16 * 1024 * 1024
  const startOf = (file: { log: number; seg: number }) => (file.log * (2 ** 32 / segmentSize) + file.seg) * segmentSize
  const bad: BadFile[] = []
  const segments: SegmentFile[] = []
  for (const file of files) {
    let failure: WalcostError | null = null
    const header = file.header
    if (header instanceof WalcostError) failure = unreadableFile(file.name, startOf(file), detailOf(header), header)
    else if (usual && usualHeader && kindOf(header) !== majority)
      failure = unreadableFile(
        file.name,
        startOf(file),
        header.major !== usualHeader.major
          ? `it is WAL of PostgreSQL ${header.major}, where ${usual.name} and most files are PostgreSQL ${usualHeader.major}'s: inspect one cluster's WAL at a time`
          : `it is another cluster's WAL than ${usual.name} (system identifier, segment or page size differ): inspect one cluster's WAL at a time`,
      )
    else if (header.address < startOf(file)) {
      skipped.push({ name: file.name, reason: 'a recycled segment that holds older WAL, not written since' })
      continue
    } else if (header.address !== startOf(file))
      failure = unreadableFile(
        file.name,
        startOf(file),
        `its first page is segment ${segmentName(file.timeline, header.address / segmentSize, segmentSize)}'s, not the one its name says (renamed, or recycled before it was copied)`,
      )
    if (failure) {
      if (!skipBad || !usual) throw failure
      bad.push({ name: file.name, lsn: failure.lsn ?? null, reason: failure.message })
      continue
    }
    segments.push({
      path: file.path,
      name: file.name,
      timeline: file.timeline,
      segment: startOf(file) / segmentSize,
      partial: file.partial,
      gzip: file.gzip,
      major: (header as LongHeader).major,
      systemId: (header as LongHeader).systemId,
    })
  }
  const { blockSize, major } = usualHeader as LongHeader
  if (segments.length === 0)
    throw inputError(`no WAL to read in ${paths.join(', ')}: every segment file is a recycled one, not written since.`)
  const timeline = Math.max(...segments.map((file) => file.timeline))
  const switches = await historyOf(timeline, found.histories, segments)
  const chosen = chooseAlongHistory(segments, timeline, switches, segmentSize)
  return {
    segments: chosen.segments,
    gaps: chosen.gaps,
    skipped: [...skipped, ...chosen.skipped],
    major,
    blockSize,
    segmentSize,
    timeline,
    switches,
    bad,
  }
}

async function historyOf(timeline: number, histories: string[], segments: SegmentFile[]): Promise<TimelineSwitch[]> {
  if (timeline === 1) return []
  const path = histories.find(
    (file) => HISTORY_NAME.exec(basename(file))?.[1] === segmentName(timeline, 0, 2 ** 32).slice(0, 8),
  )
  if (!path) {
    if (segments.every((file) => file.timeline === timeline)) return []
    throw inputError(
      `the files are on more than one timeline, and ${segmentName(timeline, 0, 2 ** 32).slice(0, 8)}.history, which says where timeline ${timeline} began, is not among them: add it (it is in the archive and in pg_wal).`,
    )
  }
  const raw = await readFile(path)
  const text = path.endsWith('.gz') ? (await gunzipped(raw)).toString('utf8') : raw.toString('utf8')
  return parseHistory(text, basename(path))
}

/**
 * One file a segment number: the newest timeline of the history that reaches into the segment and
 * has a file for it (a timeline's first segment holds its parent's WAL up to the switch), a
 * `.partial` only where no whole segment is there. Files of timelines the history does not follow,
 * or of segments a newer timeline holds, are skipped.
 */
function chooseAlongHistory(
  segments: SegmentFile[],
  timeline: number,
  switches: TimelineSwitch[],
  segmentSize: number,
): { segments: SegmentFile[]; gaps: WalGap[]; skipped: SkippedFile[] } {
  // Each timeline of the history and the LSN where it began.
  const began = new Map<number, number>([[timeline, switches.at(-1)?.switchLsn ?? 0]])
  for (const [i, entry] of switches.entries())
    began.set(entry.parent, i === 0 ? 0 : (switches[i - 1] as TimelineSwitch).switchLsn)
  const ended = new Map<number, number>(switches.map((entry) => [entry.parent, entry.switchLsn]))
  const skipped: SkippedFile[] = []
  const chosen = new Map<number, SegmentFile>()
  for (const file of segments) {
    const start = file.segment * segmentSize
    const from = began.get(file.timeline)
    const until = ended.get(file.timeline) ?? Number.POSITIVE_INFINITY
    if (from === undefined) {
      skipped.push({ name: file.name, reason: `timeline ${file.timeline} is not in timeline ${timeline}'s history` })
      continue
    }
    if (start + segmentSize <= from || start >= until) {
      skipped.push({ name: file.name, reason: `timeline ${file.timeline} did not hold this segment's WAL` })
      continue
    }
    const held = chosen.get(file.segment)
    const better =
      !held || file.timeline > held.timeline || (file.timeline === held.timeline && held.partial && !file.partial)
    if (better) {
      if (held) skipped.push({ name: held.name, reason: `${file.name} holds the same segment on the history followed` })
      chosen.set(file.segment, file)
    } else skipped.push({ name: file.name, reason: `${held.name} holds the same segment on the history followed` })
  }
  const ordered = [...chosen.values()].sort((a, b) => a.segment - b.segment)
  const gaps: WalGap[] = []
  for (let i = 1; i < ordered.length; i++) {
    const previous = ordered[i - 1] as SegmentFile
    const next = ordered[i] as SegmentFile
    if (next.segment === previous.segment + 1) continue
    const missing: string[] = []
    for (let segment = previous.segment + 1; segment < next.segment; segment++) {
      const lsn = segment * segmentSize
      const holder = [...began].filter(([, from]) => from <= lsn).sort((a, b) => b[1] - a[1])[0]?.[0] ?? timeline
      missing.push(segmentName(holder, segment, segmentSize))
    }
    gaps.push({
      fromLsn: formatLsn((previous.segment + 1) * segmentSize),
      toLsn: formatLsn(next.segment * segmentSize),
      missing,
    })
  }
  return { segments: ordered, gaps, skipped }
}

/**
 * A segment's bytes, whole: a plain file read into `buffer` (one buffer for every segment, so that
 * memory does not follow the archive), a `.gz` inflated.
 */
export async function segmentBytes(file: SegmentFile, buffer: Uint8Array): Promise<Uint8Array> {
  try {
    if (file.gzip) return new Uint8Array(await gunzipped(await readFile(file.path)))
    const handle = await open(file.path, 'r')
    try {
      let filled = 0
      while (filled < buffer.length) {
        const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled)
        if (bytesRead === 0) break
        filled += bytesRead
      }
      return buffer.subarray(0, filled)
    } finally {
      await handle.close()
    }
  } catch (error) {
    throw unreadableFile(file.name, null, `it could not be read (${(error as Error).message})`, error)
  }
}
