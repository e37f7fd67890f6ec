import { integer, oneDecimal, perSecond, ratesInOneUnit, shareOf, size, sizesInOneUnit } from '../core/format.js'
import { MB } from '../core/units.js'
import type { ObservedRelation, WalObservation } from '../traffic/observation.js'
import type { StatementWal } from '../wal/statement-wal.js'
import { relationLabel, statementLabel } from './observation-view.js'
import { renderTable } from './text.js'

/** How one relation is found again in the totals: by name where a catalog named it. */
const totalsKey = (relation: ObservedRelation) =>
  relation.name === null ? null : `${relation.databaseOid}:${relation.kind}:${relation.schema}.${relation.name}`
/** How one statement is found again in the totals (as watch-totals.ts sums them). */
const statementKey = (statement: StatementWal) =>
  `${statement.queryId}:${statement.role}:${statement.database}:${statement.topLevel}`

/**
 * What walcost top shows after each interval: the interval's WAL per second by relation (its
 * share, the share of it that is full-page images, records per second) beside each relation's
 * bytes since the start, at most `rows` relations, then the WAL of no relation as one line.
 */
export function topScreen(
  interval: WalObservation<'server'>,
  totals: WalObservation<'server'>,
  rows: number,
  { noteShown = false }: { noteShown?: boolean } = {},
): string {
  const seconds = Math.max(interval.window.durationMs, 1) / 1000
  const rate = (bytes: number) => perSecond(bytes / seconds / MB)
  const since = totals.window
  const head = [
    `walcost top  ${new Date().toISOString().slice(11, 19)}  ${interval.window.endLsn}`,
    `interval ${oneDecimal(seconds)} s: ${rate(interval.window.bytes)}, ${integer(interval.window.records === null ? null : interval.window.records / seconds)} records/s, images ${interval.relations ? shareOf(sum(interval.relations, 'fpiBytes'), interval.window.bytes) : '-'}` +
      `  |  since start ${oneDecimal(since.durationMs / 1000)} s: ${size(since.bytes)}, ${perSecond(since.bytes / (Math.max(since.durationMs, 1) / 1000) / MB)}, ${integer(since.records)} records`,
  ]
  if (!interval.relations || !interval.unattributed) {
    // The grant takes a paragraph: said once, with the first interval, and recalled in a line after that.
    const note = noteShown
      ? 'Totals only: this role cannot read the WAL by relation (the grant that gives the split is above, with the first interval).'
      : (interval.attributionNote ?? '')
    return [...head, '', ...statementsTable(interval, totals, rows, seconds), note].join('\n')
  }
  const byKey = new Map((totals.relations ?? []).map((relation) => [totalsKey(relation), relation]))
  const shown = interval.relations.slice(0, Math.max(rows, 1))
  const rest = interval.relations.slice(shown.length)
  const noRelation = sum(interval.unattributed, 'bytes')
  const lines: Array<{
    label: string
    kind: string
    part: { bytes: number; fpiBytes: number; records: number }
    total: number | null
  }> = [
    ...shown.map((relation) => {
      const key = totalsKey(relation)
      return {
        label: relationLabel(relation),
        kind: relation.kind ?? 'unknown',
        part: relation,
        total: key === null ? null : (byKey.get(key)?.bytes ?? null),
      }
    }),
    ...(rest.length > 0
      ? [
          {
            label: `${integer(rest.length)} more`,
            kind: '',
            part: { bytes: sum(rest, 'bytes'), fpiBytes: sum(rest, 'fpiBytes'), records: sum(rest, 'records') },
            total: null,
          },
        ]
      : []),
    {
      label: 'no relation',
      kind: '',
      part: { bytes: noRelation, fpiBytes: 0, records: sum(interval.unattributed, 'records') },
      total: totals.unattributed ? sum(totals.unattributed, 'bytes') : null,
    },
  ]
  // Each column in one unit, so that rows compare at a glance.
  const columnRate = ratesInOneUnit(Math.max(...lines.map((line) => line.part.bytes)) / seconds)
  const columnSize = sizesInOneUnit(Math.max(...lines.map((line) => line.total ?? 0)))
  const table = renderTable(
    ['relation', 'kind', 'WAL/s', 'share', 'images', 'records/s', 'since start', 'share'],
    lines.map(({ label, kind, part, total }) => [
      label,
      kind,
      columnRate(part.bytes / seconds),
      shareOf(part.bytes, interval.window.bytes),
      shareOf(part.fpiBytes, part.bytes),
      integer(part.records / seconds),
      total === null ? '-' : columnSize(total),
      total === null ? '-' : shareOf(total, since.bytes),
    ]),
  )
  return [...head, '', table].join('\n')
}

/**
 * pg_stat_statements' WAL by statement in a totals-only interval, beside each statement's since
 * the start: a coarser source than the WAL's split (a statement counts whole in the interval it
 * ends in), so the rows add up to less than the interval. Nothing where there is none.
 */
function statementsTable(
  interval: WalObservation<'server'>,
  totals: WalObservation<'server'>,
  rows: number,
  seconds: number,
): string[] {
  const statements = interval.statements?.statements
  if (!statements || statements.length === 0) return []
  const byKey = new Map((totals.statements?.statements ?? []).map((statement) => [statementKey(statement), statement]))
  const shown = statements.slice(0, Math.max(rows, 1))
  const totalOf = (statement: StatementWal) => byKey.get(statementKey(statement))?.walBytes ?? null
  const columnRate = ratesInOneUnit(Math.max(...shown.map((statement) => statement.walBytes)) / seconds)
  const columnSize = sizesInOneUnit(Math.max(...shown.map((statement) => totalOf(statement) ?? 0)))
  const table = renderTable(
    ['statement (pg_stat_statements)', 'WAL/s', 'share', 'images/s', 'calls/s', 'since start', 'share'],
    shown.map((statement) => {
      const total = totalOf(statement)
      return [
        statementLabel(statement),
        columnRate(statement.walBytes / seconds),
        shareOf(statement.walBytes, interval.window.bytes),
        integer(statement.walFpi / seconds),
        integer(statement.calls / seconds),
        total === null ? '-' : columnSize(total),
        total === null ? '-' : shareOf(total, totals.window.bytes),
      ]
    }),
  )
  return [table, '']
}

function sum<Key extends string>(parts: ReadonlyArray<Record<Key, number>>, key: Key): number {
  return parts.reduce((total, part) => total + part[key], 0)
}
