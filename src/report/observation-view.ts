import { counted, integer, oneDecimal, shareOf, size } from '../core/format.js'
import type { ObservedRelation, WalObservation } from '../measure/observation.js'

/** Relations the table and the chart show one by one; the rest are summed in one line. */
const SHOWN_RELATIONS = 30

/** A relation as a reader finds it: schema-qualified, or by file where no catalog named it. */
export function relationLabel(relation: ObservedRelation): string {
  if (relation.name !== null) return `${relation.schema}.${relation.name}`
  const [file] = relation.files
  return `relfilenode ${file?.relfilenode ?? '?'}${relation.database === null ? '' : ` in ${relation.database}`}`
}

/** The parts of one observation: each relation, then the WAL of no relation by kind. */
export function observationView(observation: WalObservation) {
  const { window } = observation
  const title = `WAL ${window.startLsn} .. ${window.endLsn}: ${size(window.bytes)} in ${oneDecimal(window.durationMs / 1000)} s`
  const headers = ['relation', 'kind', 'of', 'records', 'bytes', 'share', 'FPIs']
  if (!observation.relations || !observation.unattributed) {
    return {
      title,
      headers,
      rows: [['WAL (not split)', '', '', window.statWal.records, window.bytes, '100%', window.statWal.fpi]],
      chart: {
        data: [{ group: 'window', part: 'WAL (not split)', value: window.bytes }],
        axis: 'relation',
        valueTitle: 'WAL bytes',
      },
      summary: [
        `${size(window.bytes)} of WAL between the two positions; pg_stat_wal counted ${counted(window.statWal.records, 'record')} and ${counted(window.statWal.fpi, 'full-page image')}.`,
        observation.attributionNote ?? '',
        ...observation.notes,
      ]
        .filter(Boolean)
        .join(' '),
    }
  }
  const shown = observation.relations.slice(0, SHOWN_RELATIONS)
  const rest = observation.relations.slice(SHOWN_RELATIONS)
  const restBytes = rest.reduce((sum, relation) => sum + relation.bytes, 0)
  const share = (bytes: number) => shareOf(bytes, window.bytes)
  const rows: Array<Array<string | number>> = [
    ...shown.map((relation) => [
      relationLabel(relation),
      relation.kind ?? 'unknown',
      relation.table ?? '',
      relation.records,
      relation.bytes,
      share(relation.bytes),
      relation.fpiCount,
    ]),
    ...(rest.length > 0
      ? [
          [
            `${counted(rest.length, 'more relation')}`,
            '',
            '',
            rest.reduce((sum, relation) => sum + relation.records, 0),
            restBytes,
            share(restBytes),
            rest.reduce((sum, relation) => sum + relation.fpiCount, 0),
          ],
        ]
      : []),
    ...observation.unattributed.map((part) => [
      part.kind,
      'no relation',
      '',
      part.records,
      part.bytes,
      share(part.bytes),
      0,
    ]),
  ]
  const relationBars = shown.flatMap((relation) => [
    { group: relationLabel(relation), part: 'records', value: relation.bytes - relation.fpiBytes },
    { group: relationLabel(relation), part: 'full-page images', value: relation.fpiBytes },
  ])
  const reasons = observation.fpiReasons
  const transactions = observation.transactions
  return {
    title,
    headers,
    rows,
    chart: {
      data: [
        ...relationBars,
        ...(rest.length > 0 ? [{ group: 'other relations', part: 'records', value: restBytes }] : []),
        ...observation.unattributed.map((part) => ({ group: part.kind, part: 'no relation', value: part.bytes })),
      ],
      axis: 'relation',
      valueTitle: 'WAL bytes',
    },
    summary: [
      `${counted(window.records ?? 0, 'record')} from ${counted(observation.relations.length, 'relation')}, ${counted(window.fpiCount ?? 0, 'full-page image')}${reasons ? ` (${integer(reasons.afterCheckpoint.count)} first changes after a checkpoint, ${integer(reasons.hintBits.count)} for hint bits, ${integer(reasons.other.count)} other)` : ''}.`,
      transactions
        ? `${counted(transactions.committed, 'commit')}, ${counted(transactions.aborted, 'abort')} (${size(transactions.abortedBytes)} of WAL rolled back).`
        : '',
      ...observation.notes,
    ]
      .filter(Boolean)
      .join(' '),
  }
}
