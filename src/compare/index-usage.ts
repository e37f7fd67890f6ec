// Which indexes may be dropped: one judgement, from the usage counters and what each index backs,
// shared by auditIndexes (which also measures their cost) and compareRemedies (which measures the
// table without them).
/** The option both entry points take: how long counters must cover before an unscanned index may go. */
import { z } from 'zod'
import { DEFAULT_MIN_STATS_AGE_DAYS } from '../core/defaults.js'
import { counted, oneDecimal, size } from '../core/format.js'
import type { Session } from '../driver/types.js'
import type { Table } from '../measure/catalog.js'

export const minStatsAgeDaysSchema = z
  .number()
  .min(0)
  .default(DEFAULT_MIN_STATS_AGE_DAYS)
  .describe('How many days index counters must cover before an unscanned index is a drop candidate.')

/** 'drop-candidate': never scanned over long enough counters and backs nothing. */
export type IndexVerdict = 'keep' | 'review' | 'drop-candidate'

const DAY_MS = 86_400_000

/** Counters accumulate from the database's stats reset or, if never reset, at least since the server started. */
export async function readStatsAge(session: Session): Promise<{ statsSince: string; statsAgeDays: number }> {
  const [row] = await session.query<{ since: string; age_ms: string }>(
    `select to_char(since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as since,
            (extract(epoch from now() - since) * 1000)::int8::text as age_ms
       from (select coalesce((select stats_reset from pg_stat_database where datname = current_database()), pg_postmaster_start_time()) as since) s`,
  )
  return { statsSince: row?.since ?? '', statsAgeDays: Number(row?.age_ms ?? 0) / DAY_MS }
}

/** The verdict on one index and its reason; `bytesPerRow` is what it costs, for the reason's text. */
export function judge(
  idxScan: number,
  backs: string | null,
  ageDays: number,
  minAgeDays: number,
  bytesPerRow: number | null,
): { verdict: IndexVerdict; reason: string } {
  const cost = bytesPerRow === null ? 'an unknown amount of WAL a row' : `${Math.round(bytesPerRow)} bytes of WAL a row`
  const window = ageDays >= 1 ? counted(Math.floor(ageDays), 'day') : `${oneDecimal(ageDays * 24)} hours`
  if (backs !== null) return { verdict: 'keep', reason: `backs a ${backs}; it costs ${cost}.` }
  if (idxScan === 0 && ageDays >= minAgeDays) {
    return {
      verdict: 'drop-candidate',
      reason: `never scanned in ${window} of counters and backs no constraint; it costs ${cost}. Check replicas and rare jobs (month-end reports) before dropping it.`,
    }
  }
  if (idxScan === 0) {
    return {
      verdict: 'review',
      reason: `not scanned, but the counters cover only ${window}: too short to judge (at least ${counted(minAgeDays, 'day')} are asked for: minStatsAgeDays, --min-stats-age-days). It costs ${cost}.`,
    }
  }
  const perDay = idxScan / Math.max(ageDays, 1 / 24)
  if (perDay < 1 && ageDays >= minAgeDays) {
    return { verdict: 'review', reason: `scanned ${counted(idxScan, 'time')} in ${window}: rarely used for ${cost}.` }
  }
  return { verdict: 'keep', reason: `scanned ${counted(idxScan, 'time')} in ${window}; it costs ${cost}.` }
}

/** The indexes of `table` the judgement makes drop candidates, by name. */
export async function dropCandidates(session: Session, table: Table, minStatsAgeDays: number): Promise<string[]> {
  const { statsAgeDays } = await readStatsAge(session)
  return table.indexes
    .filter(
      (index) => judge(index.scans, index.backs, statsAgeDays, minStatsAgeDays, null).verdict === 'drop-candidate',
    )
    .map((index) => index.name)
    .sort()
}

/** Each index of the table's scans so far, by name (pg_stat_get_numscans), for a difference over a window. */
export async function readIndexScans(session: Session, tableOid: string): Promise<Map<string, number>> {
  const rows = await session.query<{ name: string; scans: string }>(
    `select c.relname::text as name, pg_stat_get_numscans(i.indexrelid)::text as scans
       from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = $1::oid`,
    [tableOid],
  )
  return new Map(rows.map((row) => [row.name, Number(row.scans)]))
}

/** What an index did in an observed window of the server's own traffic. */
export interface IndexTraffic {
  /** The WAL the index took in the window (its records and their images), from the WAL itself. */
  walBytes: number
  records: number
  fpiCount: number
  /** Its scans over the window (pg_stat_get_numscans after less before). */
  idxScan: number
}

/**
 * The verdict from an observed window rather than the lifetime counters: an index written in it
 * but never scanned, backing nothing, is a drop candidate if the window is long enough for
 * minStatsAgeDays; scanned in it, it stays.
 */
export function judgeTraffic(
  traffic: IndexTraffic,
  backs: string | null,
  windowMs: number,
  minAgeDays: number,
): { verdict: IndexVerdict; reason: string } {
  const window = windowMs >= DAY_MS ? counted(Math.floor(windowMs / DAY_MS), 'day') : `${oneDecimal(windowMs / 1000)} s`
  const took = `it took ${size(traffic.walBytes)} of WAL (${counted(traffic.records, 'record')}, ${counted(traffic.fpiCount, 'full-page image')}) in the ${window} observed`
  if (backs !== null) return { verdict: 'keep', reason: `backs a ${backs}; ${took}.` }
  if (traffic.idxScan > 0)
    return { verdict: 'keep', reason: `scanned ${counted(traffic.idxScan, 'time')} while ${took}.` }
  if (traffic.walBytes === 0) {
    return {
      verdict: 'review',
      reason: `neither written nor scanned in the ${window} observed: the window says nothing of it. Observe while the table takes writes.`,
    }
  }
  if (windowMs / DAY_MS < minAgeDays) {
    return {
      verdict: 'review',
      reason: `never scanned while ${took}, but the window is shorter than minStatsAgeDays (${counted(minAgeDays, 'day')}; --min-stats-age-days 0 judges on it).`,
    }
  }
  return {
    verdict: 'drop-candidate',
    reason: `written but never scanned: ${took}, and it backs no constraint. Check replicas and rare jobs (month-end reports) before dropping it.`,
  }
}
