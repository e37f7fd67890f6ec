import { z } from 'zod'
import { DEFAULT_MIN_STATS_AGE_DAYS } from '../core/defaults.js'
import { counted, oneDecimal } from '../core/format.js'
import type { Session } from '../driver/types.js'
import type { Table } from '../measure/catalog.js'

// Which indexes may be dropped: one judgement, from the usage counters and what each index backs,
// shared by auditIndexes (which also measures their cost) and compareRemedies (which measures the
// table without them).

/** The option both entry points take: how long counters must cover before an unscanned index may go. */
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
