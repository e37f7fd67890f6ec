// WAL segment files as archives and copies of pg_wal hold them: plain or compressed, `.partial`, on
// one or more timelines (history files), named by timeline, log and segment (wal-traffic.md), in the
// folders and under the names the archiving tools give them (pgBackRest, barman, WAL-G, cp).
import { open, readdir, realpath, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { WalcostError } from '../core/errors.js'
import { XLOG_LONG_PAGE_HEADER } from '../core/units.js'
import { formatLsn, PAGE_MAGIC } from '../decode/reader.js'
import { CODEC_EXTENSIONS, type Codec, codecOfMagic, DecodeFailure, decompressInto, foreignFormatOf } from './codecs.js'

const EXTENSIONS = Object.keys(CODEC_EXTENSIONS)
const CHECKSUM = '(?:-[0-9a-f]{40})?'
const EXTENSION = `(?:\\.(${EXTENSIONS.join('|')}))?`
// pgBackRest puts the file's SHA-1 after the name (and after .partial), then the compression's extension.
const SEGMENT_NAME = new RegExp(
  `^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})${CHECKSUM}(\\.partial)?${CHECKSUM}${EXTENSION}$`,
)
const HISTORY_NAME = new RegExp(`^([0-9A-F]{8})\\.history${CHECKSUM}${EXTENSION}$`)
/** Starts as a segment's name does: read, or reported, never passed over. */
const LIKE_A_SEGMENT = /^[0-9A-F]{24}/
/** Files archives keep beside the WAL that are not WAL: passed over without a word. */
const NOT_WAL = [
  /^[0-9A-F]{24}\.[0-9A-F]{8}\.backup/, // a base backup's label, as PostgreSQL archives it
  /\.(ready|done)$/, // pg_wal/archive_status
  /^[0-9A-F]{40}\.summary$/, // pg_wal/summaries (PostgreSQL 17's WAL summaries)
  /^(archive|backup)\.info(\.copy)?$/, // pgBackRest's repository files
  /^xlog\.db$/, // barman's index of its WAL
  /\.json$/, // WAL-G's sentinels and metadata
  /^walg_/,
]
/** barman's errors folder: files it set aside (a duplicate of an archived one, or unknown). */
const SET_ASIDE = /^[0-9A-F]{24}\S*\.(duplicate|unknown|error)$/
const XLP_LONG_HEADER = 0x0002
const MAJOR_OF_MAGIC = new Map(Object.entries(PAGE_MAGIC).map(([major, magic]) => [magic, Number(major)]))
/** Files whose first bytes are read at once while planning: a bound on open files. */
const HEADS_AT_ONCE = 16
const DEFAULT_SEGMENT_SIZE = 16 * 1024 * 1024

/** What walcost looks for, for the message that found none. */
export const SEGMENT_NAMES_SOUGHT = `files named as PostgreSQL names segments (24 hex digits, e.g. 000000010000000000000001), in the folder and every folder below it, optionally followed by pgBackRest's -<40 hex digits> checksum, .partial, and a compression extension (${EXTENSIONS.map((extension) => `.${extension}`).join(', ')}); gzip, lz4, zstd and bzip2 data is also told by its magic number under a plain name, as barman keeps it`

/** One segment file and what its name and first page say. */
export interface SegmentFile {
  path: string
  /** The file's name without its folder. */
  name: string
  timeline: number
  /** Its segment number: its first byte's LSN over the segment size. */
  segment: number
  partial: boolean
  /** What the file holds: compressed data of a codec (by magic number, else by extension), or null for plain WAL. */
  codec: Codec | null
  /** The codec its name says (its extension); null for a plain name. */
  named: Codec | null
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
  systemId: string
  /** The newest timeline, whose history is followed. */
  timeline: number
  switches: TimelineSwitch[]
  gaps: WalGap[]
  skipped: SkippedFile[]
  /** Files left out with skipBad because they could not be read, or their first page did not. */
  bad: BadFile[]
  /** A zero-filled segment right after the last one read (pre-allocated, not written yet): the WAL ends at its start. */
  preallocated: { segment: number; name: string } | null
}

/** A file left out with skipBad: why, and where (null where no LSN is known). */
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

/** A file named as a segment, before it is opened. */
interface NamedSegment {
  path: string
  name: string
  timeline: number
  log: number
  seg: number
  partial: boolean
  named: Codec | null
}

interface Listing {
  segments: NamedSegment[]
  histories: string[]
  /** Files that are no WAL walcost reads, and why: named as a segment with another extension, set aside. */
  refused: BadFile[]
  skipped: SkippedFile[]
}

/** A file's name sorted into what it is: a segment, a history file, an archive's own file, or neither. */
function sortName(path: string, found: Listing, given: boolean): void {
  const name = basename(path)
  const segment = SEGMENT_NAME.exec(name)
  if (segment) {
    const [, timeline, log, seg, partial, extension] = segment
    found.segments.push({
      path,
      name,
      timeline: Number.parseInt(timeline as string, 16),
      log: Number.parseInt(log as string, 16),
      seg: Number.parseInt(seg as string, 16),
      partial: partial !== undefined,
      named: extension === undefined ? null : (CODEC_EXTENSIONS[extension] as Codec),
    })
  } else if (HISTORY_NAME.test(name)) found.histories.push(path)
  else if (NOT_WAL.some((pattern) => pattern.test(name))) return
  else if (SET_ASIDE.test(name))
    found.skipped.push({ name, reason: 'set aside by barman (its errors folder): a duplicate or an unknown file' })
  else if (LIKE_A_SEGMENT.test(name))
    found.refused.push({
      name,
      lsn: null,
      reason: `it is named as a WAL segment followed by "${name.slice(24)}", which is no compression walcost decodes (it reads plain segments and ${EXTENSIONS.map((extension) => `.${extension}`).join(', ')}, with pgBackRest's -<sha1> checksum and .partial)`,
    })
  else if (given) found.skipped.push({ name, reason: 'not named as a WAL segment' })
}

/** Every file below `folder`, each folder once (a symbolic link back up is not followed again). */
async function walk(folder: string, found: Listing, seen: Set<string>): Promise<void> {
  const real = await realpath(folder)
  if (seen.has(real)) return
  seen.add(real)
  const entries = await readdir(folder, { withFileTypes: true }).catch((error: unknown) => {
    throw inputError(`${folder}: the folder could not be listed (${(error as Error).message}).`, error)
  })
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const path = join(folder, entry.name)
    const info = entry.isSymbolicLink() ? await stat(path).catch(() => null) : entry
    if (info?.isDirectory()) await walk(path, found, seen)
    else if (info?.isFile()) sortName(path, found, false)
  }
}

/** The files to read, from the paths given: folders walked to the bottom, files taken as they are. */
async function listed(paths: readonly string[]): Promise<Listing> {
  const found: Listing = { segments: [], histories: [], refused: [], skipped: [] }
  const seen = new Set<string>()
  for (const path of paths) {
    const info = await stat(path).catch((error: unknown) => {
      throw inputError(`${path}: no such file or folder; give WAL segment files or a folder that holds them.`, error)
    })
    if (info.isDirectory()) await walk(path, found, seen)
    else sortName(path, found, true)
  }
  return found
}

/** Up to `length` first bytes of a file as it lies on disk. */
async function rawHead(path: string, length: number): Promise<Uint8Array> {
  const handle = await open(path, 'r')
  try {
    const buffer = new Uint8Array(length)
    const { bytesRead } = await handle.read(buffer, 0, length, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

interface LongHeader {
  major: number
  address: number
  systemId: bigint
  segmentSize: number
  blockSize: number
}

/** A first page of zeros: a segment the server created (pre-allocated, wal_init_zero) and has not written. */
const zeroed = (bytes: Uint8Array) => bytes.length >= XLOG_LONG_PAGE_HEADER && bytes.every((byte) => byte === 0)

/** A segment's long header, or what is wrong with its first page (without the file's name). */
function longHeader(bytes: Uint8Array): LongHeader | string {
  if (bytes.length < XLOG_LONG_PAGE_HEADER)
    return `it has ${bytes.length} bytes, less than a segment's first page header`
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const magic = view.getUint16(0, true)
  const major = MAJOR_OF_MAGIC.get(magic)
  if (major === undefined) {
    const foreign = foreignFormatOf(bytes)
    return foreign
      ? `it holds ${foreign} data, which walcost does not decode: decompress it first`
      : `its first page has magic 0x${magic.toString(16)}, which is no WAL of PostgreSQL 14 to 18 (not a WAL segment, or another version's)`
  }
  if ((view.getUint16(2, true) & XLP_LONG_HEADER) === 0)
    return 'its first page has no long header: it is not the start of a segment'
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

/** WAL_UNREADABLE for a file, at an LSN where one is known (never 0/0, which no segment holds). */
export function unreadableFile(name: string, lsn: number | null, detail: string, cause?: unknown): WalcostError {
  const at = lsn === null || lsn === 0 ? null : formatLsn(lsn)
  return new WalcostError(
    'WAL_UNREADABLE',
    `${name}${at === null ? '' : ` at ${at}`}: ${detail}. Nothing was reported from it; pass --skip-bad (skipBad: true) to report the rest without it.`,
    { ...(cause === undefined ? {} : { cause }), file: name, ...(at === null ? {} : { lsn: at }) },
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
      parent: Number.parseInt(match[1] as string, 10),
      switchLsn: Number.parseInt(match[2] as string, 16) * 2 ** 32 + Number.parseInt(match[3] as string, 16),
    })
  }
  return switches
}

/** `items` mapped with at most `limit` of `map` running at once. */
async function mapLimited<T, R>(items: readonly T[], limit: number, map: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await map(items[i] as T)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}

/** A file named as a segment, with what its first bytes say. */
interface Opened extends NamedSegment {
  codec: Codec | null
  /** Its long header (read for plain files, and for one compressed file where no plain one gives the layout), what is wrong with it, or null: not read here. */
  header: LongHeader | WalcostError | null
  zeroed: boolean
}

/** Opens a file named as a segment: its codec from its first bytes, and, for plain WAL, its long header. */
async function opened(file: NamedSegment): Promise<Opened> {
  try {
    const raw = await rawHead(file.path, XLOG_LONG_PAGE_HEADER)
    // brotli has no magic number: its extension says it. Plain WAL under a codec's name is read as it is.
    const codec = codecOfMagic(raw) ?? (file.named === 'brotli' ? 'brotli' : null)
    if (codec !== null) return { ...file, codec, header: null, zeroed: false }
    if (zeroed(raw)) {
      if (await allZeros(file.path)) return { ...file, codec, header: null, zeroed: true }
      return {
        ...file,
        codec,
        zeroed: false,
        header: unreadableFile(
          file.name,
          null,
          'its first page header is zeros, and later bytes are not: it is damaged',
        ),
      }
    }
    const header = longHeader(raw)
    const named =
      file.named === null ? '' : `it is named .${file.name.split('.').at(-1)} but holds no ${file.named} data, and `
    return {
      ...file,
      codec,
      zeroed: false,
      header:
        typeof header === 'string'
          ? unreadableFile(file.name, null, `${named}${named ? header.replace(/^it /, '') : header}`)
          : header,
    }
  } catch (error) {
    return {
      ...file,
      codec: null,
      zeroed: false,
      header: unreadableFile(file.name, null, `it could not be read (${(error as Error).message})`, error),
    }
  }
}

/** Whether a file holds nothing but zeros (read in pieces: it is a segment, 16 MB as a rule). */
async function allZeros(path: string): Promise<boolean> {
  const handle = await open(path, 'r')
  try {
    const piece = new Uint8Array(1024 * 1024)
    for (let position = 0; ; ) {
      const { bytesRead } = await handle.read(piece, 0, piece.length, position)
      if (bytesRead === 0) return true
      for (let i = 0; i < bytesRead; i++) if (piece[i] !== 0) return false
      position += bytesRead
    }
  } finally {
    await handle.close()
  }
}

/** A compressed file's long header, decompressed as far as its first page. */
async function decompressedHeader(file: Opened): Promise<LongHeader | WalcostError> {
  try {
    const bytes = await decompressInto(file.path, file.codec as Codec, new Uint8Array(XLOG_LONG_PAGE_HEADER), {
      head: true,
    })
    if (zeroed(bytes)) return unreadableFile(file.name, null, ZEROED_COMPRESSED)
    const header = longHeader(bytes)
    return typeof header === 'string' ? unreadableFile(file.name, null, decompressedDetail(file, header)) : header
  } catch (error) {
    return unreadableFile(file.name, null, decodeDetail(file, error), error)
  }
}

const ZEROED_COMPRESSED = 'it decompresses to zeros: a segment the server had not written yet, archived by mistake'

/** Names a codec's data as a message does: "gzip data under a plain segment name". */
function dataOf(file: Pick<SegmentFile, 'codec' | 'named'>): string {
  const under =
    file.named === file.codec
      ? ''
      : file.named === null
        ? ' under a plain segment name'
        : ` under a .${EXTENSIONS.find((extension) => CODEC_EXTENSIONS[extension] === file.named)} name`
  return `${file.codec} data${under}`
}

/** What a file's failed decompression says. */
export function decodeDetail(file: Pick<SegmentFile, 'codec' | 'named'>, error: unknown): string {
  if (!(error instanceof DecodeFailure)) return `it could not be read (${(error as Error).message})`
  if (error.kind === 'cut short') return `it holds ${dataOf(file)} cut short (the file ends inside the compressed data)`
  if (error.kind === 'too long') return `it holds ${dataOf(file)} that decompresses to more than a segment`
  return `it holds ${dataOf(file)} that does not decompress (${error.message})`
}

function decompressedDetail(file: Pick<SegmentFile, 'codec' | 'named'>, detail: string): string {
  return `it holds ${dataOf(file)} that decompresses to no WAL segment: ${detail.replace(/^it /, '')}`
}

interface Layout {
  major: number
  systemId: bigint
  segmentSize: number
  blockSize: number
}

const kindOf = (header: Layout) => `${header.major}/${header.systemId}/${header.segmentSize}/${header.blockSize}`

/**
 * What is wrong with a segment's first page against the layout the other files share and the
 * segment its name says, as a detail; null when nothing is; 'recycled' for older WAL a recycled
 * segment still holds.
 */
function headerFailure(
  header: LongHeader,
  layout: Layout & { name: string },
  file: Pick<SegmentFile, 'timeline'>,
  start: number,
): string | 'recycled' | null {
  if (kindOf(header) !== kindOf(layout))
    return header.major !== layout.major
      ? `it is WAL of PostgreSQL ${header.major}, where ${layout.name} and most files are PostgreSQL ${layout.major}'s: inspect one cluster's WAL at a time`
      : `it is another cluster's WAL than ${layout.name} (system identifier, segment or page size differ): inspect one cluster's WAL at a time`
  if (header.address < start) return 'recycled'
  if (header.address !== start)
    return `its first page is segment ${segmentName(file.timeline, header.address / layout.segmentSize, layout.segmentSize)}'s, not the one its name says (renamed, or recycled before it was copied)`
  return null
}

/**
 * Checks a segment's bytes as read (a compressed file's first page is first seen here) against the
 * plan: throws WAL_UNREADABLE naming the file.
 */
export function checkSegmentStart(file: SegmentFile, bytes: Uint8Array, plan: ArchivePlan): void {
  const start = file.segment * plan.segmentSize
  const header = longHeader(bytes)
  let detail: string | null
  if (file.codec !== null && zeroed(bytes.subarray(0, XLOG_LONG_PAGE_HEADER))) detail = ZEROED_COMPRESSED
  else if (typeof header === 'string') detail = file.codec === null ? header : decompressedDetail(file, header)
  else {
    const failure = headerFailure(
      header,
      { ...plan, systemId: BigInt(plan.systemId), name: plan.segments[0]?.name ?? file.name },
      file,
      start,
    )
    detail = failure === 'recycled' ? `${dataOf(file)} of a recycled segment, older WAL than its name says` : failure
  }
  if (detail !== null) throw unreadableFile(file.name, start, detail)
}

/** Whether a file named as a segment holds WAL of [from, to), for a segment size. */
const inRange = (file: NamedSegment, segmentSize: number, from: number, to: number) => {
  const start = (file.log * (2 ** 32 / segmentSize) + file.seg) * segmentSize
  return start + segmentSize > from && start < to
}

/**
 * The segments to read from files and folders: found by name in every folder below the ones given,
 * opened only where they hold WAL of [from, to) (their codec from their magic number; a plain file's
 * first page read: the major from the page magic, the segment and page sizes from the long header;
 * a compressed file's is checked when it is read), one file a segment along the newest timeline's
 * history, gaps found. Mixed majors or clusters are refused with the files named.
 */
export async function planArchive(
  paths: readonly string[],
  { skipBad = false, from = 0, to = Number.POSITIVE_INFINITY } = {},
): Promise<ArchivePlan> {
  const found = await listed(paths)
  if (found.segments.length === 0 && found.refused.length === 0)
    throw inputError(`no WAL segment files in ${paths.join(', ')}: walcost looks for ${SEGMENT_NAMES_SOUGHT}.`)
  const bad: BadFile[] = []
  const leaveOut = (failure: WalcostError, canSkip: boolean) => {
    if (!skipBad || !canSkip) throw failure
    bad.push({ name: failure.file ?? '', lsn: failure.lsn ?? null, reason: detailOf(failure) })
  }
  // The segment size the names are read with: the default's until a first page says otherwise.
  const byPreference = (file: Opened) => (file.codec === null ? 0 : file.codec === 'bzip2' ? 2 : 1)
  let segmentSize = DEFAULT_SEGMENT_SIZE
  const cache = new Map<string, Opened>()
  const open = (files: NamedSegment[]) =>
    mapLimited(files, HEADS_AT_ONCE, async (file) => {
      const known = cache.get(file.path)
      if (known) return known
      const result = await opened(file)
      cache.set(file.path, result)
      return result
    })
  let files: Opened[] = []
  let layout: (Layout & { name: string }) | null = null
  for (let attempt = 0; attempt < 2 && layout?.segmentSize !== segmentSize; attempt++) {
    if (layout) segmentSize = layout.segmentSize
    files = await open(found.segments.filter((file) => inRange(file, segmentSize, from, to)))
    // None in the range at the usual segment size: the first file by name says which size it is.
    const sample = files.length === 0 && attempt === 0 ? await open(found.segments.slice(0, 1)) : []
    // What most plain files say decides what the others are: WAL of one cluster, one major, one layout.
    const kinds = new Map<string, { count: number; header: LongHeader; name: string }>()
    for (const file of [...files, ...sample])
      if (file.header !== null && !(file.header instanceof WalcostError)) {
        const kind = kinds.get(kindOf(file.header)) ?? { count: 0, header: file.header, name: file.name }
        kind.count += 1
        kinds.set(kindOf(file.header), kind)
      }
    // No plain file: one compressed file's first page gives the layout, the cheapest codec's.
    if (kinds.size === 0)
      for (const file of [...files, ...sample]
        .filter((entry) => entry.codec !== null)
        .sort((a, b) => byPreference(a) - byPreference(b))) {
        file.header = await decompressedHeader(file)
        if (!(file.header instanceof WalcostError)) {
          kinds.set(kindOf(file.header), { count: 1, header: file.header, name: file.name })
          break
        }
      }
    const majority = [...kinds.values()].sort((a, b) => b.count - a.count)[0]
    layout = majority ? { ...majority.header, name: majority.name } : null
    if (!layout) break
  }
  for (const file of found.refused) leaveOut(unreadableFile(file.name, null, file.reason), layout !== null)
  if (!layout || files.length === 0) {
    const failure = files.find((file) => file.header instanceof WalcostError)?.header
    if (failure instanceof WalcostError) throw failure
    if (files.length > 0)
      throw inputError(
        `no WAL to read in ${paths.join(', ')}: every segment file of the range is zero-filled, not written yet.`,
      )
    throw inputError(
      `no WAL segment files in ${paths.join(', ')} hold WAL of the range asked (${from === 0 ? 'the start' : formatLsn(from)} to ${to === Number.POSITIVE_INFINITY ? 'the end' : formatLsn(to)}): widen from/to (--from, --to).`,
    )
  }
  const startOf = (file: { log: number; seg: number }) => (file.log * (2 ** 32 / segmentSize) + file.seg) * segmentSize
  const skipped: SkippedFile[] = [...found.skipped]
  const zeros: Opened[] = []
  const segments: SegmentFile[] = []
  for (const file of files) {
    const start = startOf(file)
    if (file.zeroed) {
      zeros.push(file)
      continue
    }
    let failure: WalcostError | null = null
    // A plain file's first page is where its name puts it; a compressed file's failure has no LSN.
    if (file.header instanceof WalcostError)
      failure =
        file.codec === null
          ? unreadableFile(file.name, start, detailOf(file.header), file.header.cause ?? file.header)
          : file.header
    else if (file.header !== null) {
      const detail = headerFailure(file.header, layout, file, start)
      if (detail === 'recycled') {
        skipped.push({ name: file.name, reason: 'a recycled segment that holds older WAL, not written since' })
        continue
      }
      if (detail !== null) failure = unreadableFile(file.name, start, detail)
    }
    if (failure) {
      leaveOut(failure, true)
      continue
    }
    segments.push({
      path: file.path,
      name: file.name,
      timeline: file.timeline,
      segment: start / segmentSize,
      partial: file.partial,
      codec: file.codec,
      named: file.named,
    })
  }
  if (segments.length === 0)
    throw inputError(
      `no WAL to read in ${paths.join(', ')}: every segment file of the range is a recycled one or zero-filled, not written since.`,
    )
  const timeline = Math.max(...segments.map((file) => file.timeline))
  const switches = await historyOf(timeline, found.histories, segments)
  const chosen = chooseAlongHistory(segments, timeline, switches, segmentSize)
  const last = chosen.segments.at(-1) as SegmentFile
  let preallocated: ArchivePlan['preallocated'] = null
  for (const file of zeros.sort((a, b) => startOf(a) - startOf(b))) {
    const segment = startOf(file) / segmentSize
    if (segment > last.segment) {
      skipped.push({
        name: file.name,
        reason:
          'zero-filled: a segment the server created ahead (pre-allocated) and has not written, after the end of the WAL',
      })
      if (segment === last.segment + 1) preallocated = { segment, name: file.name }
    } else
      leaveOut(
        unreadableFile(
          file.name,
          startOf(file),
          'it is zero-filled, yet later segments hold WAL: its WAL was lost (a copy taken before the server wrote it)',
        ),
        true,
      )
  }
  return {
    segments: chosen.segments,
    gaps: chosen.gaps,
    skipped: [...skipped, ...chosen.skipped],
    major: layout.major,
    blockSize: layout.blockSize,
    segmentSize,
    systemId: String(layout.systemId),
    timeline,
    switches,
    bad,
    preallocated,
  }
}

/** The history file of `timeline`, read (decompressed where an archive compressed it). */
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
  const name = basename(path)
  const raw = await rawHead(path, HISTORY_BYTES)
  const extension = HISTORY_NAME.exec(name)?.[2]
  const codec = codecOfMagic(raw) ?? (extension === undefined ? null : (CODEC_EXTENSIONS[extension] as Codec))
  const bytes =
    codec === null
      ? raw
      : await decompressInto(path, codec, new Uint8Array(HISTORY_BYTES)).catch((error: unknown) => {
          throw inputError(`${name}: ${decodeDetail({ codec, named: codec }, error)}.`, error)
        })
  return parseHistory(new TextDecoder().decode(bytes), name)
}

/** A history file's size at most: a line a timeline switch. */
const HISTORY_BYTES = 1024 * 1024
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
 * A segment's bytes, whole, into `buffer` (one buffer for every segment, so that memory does not
 * follow the archive): a plain file read, a compressed one decompressed.
 */
export async function segmentBytes(file: SegmentFile, buffer: Uint8Array): Promise<Uint8Array> {
  if (file.codec !== null)
    return decompressInto(file.path, file.codec, buffer).catch((error: unknown) => {
      throw unreadableFile(file.name, null, decodeDetail(file, error), error)
    })
  try {
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
