import { counted, integer, oneDecimal, shareOf, size } from '../core/format.js'
import type { ObservedRelation, WalObservation } from '../traffic/observation.js'
import type { StatementWal } from '../wal/statement-wal.js'
import { walSourceText } from './caveats.js'

/** A relation's bar: the bytes of its records apart from their images (a count of records reads as records, not bytes). */
const RECORD_BYTES = 'record bytes without images'

/** Relations the table and the chart show one by one; the rest are summed in one line. */
const SHOWN_RELATIONS = 30
/** A statement's text is cut to this many characters in the table. */
const STATEMENT_TEXT = 60

/** A statement as the table shows it: its text on one line, cut, or whose it is where hidden. */
export function statementLabel(statement: StatementWal): string {
  if (statement.query === null) return `statements of ${statement.role ?? 'a dropped role'} (text not visible)`
  const text = statement.query.replace(/\s+/g, ' ').trim()
  return text.length > STATEMENT_TEXT ? `${text.slice(0, STATEMENT_TEXT - 3)}...` : text
}

/** A relation as a reader finds it: schema-qualified, or by file where no catalog named it. */
export function relationLabel(relation: ObservedRelation): string {
  if (relation.name !== null) return `${relation.schema}.${relation.name}`
  const [file] = relation.files
  const database =
    relation.database ?? (relation.databaseOid === 0 ? 'the shared catalogs' : `database ${relation.databaseOid}`)
  return `relfilenode ${file?.relfilenode ?? '?'} in ${database}`
}

/** The parts of one observation: each relation, then the WAL of no relation by kind. */
export function observationView(observation: WalObservation) {
  const { window } = observation
  const span =
    window.durationMs === null
      ? `from ${counted(observation.files?.read ?? 0, 'segment file')}`
      : `in ${oneDecimal(window.durationMs / 1000)} s`
  const left = observation.files?.bad.length ?? 0
  // Files left out (skipBad) are in the totals line, so that no reader takes the totals for the whole archive.
  const leftOut = left === 0 ? '' : `, ${counted(left, 'file')} left out as unreadable (see below)`
  const title = `WAL ${window.startLsn} .. ${window.endLsn}: ${size(window.bytes)} ${span}${leftOut}`
  const headers = ['relation', 'kind', 'of', 'records', 'bytes', 'share', 'FPIs']
  if (!observation.relations || !observation.unattributed) {
    return {
      title,
      headers,
      rows: [
        ['WAL (not split)', '', '', window.statWal?.records ?? '-', window.bytes, '100%', window.statWal?.fpi ?? '-'],
        // A coarser source beside the totals, never a part of them: labelled as pg_stat_statements'.
        ...(observation.statements?.statements.slice(0, SHOWN_RELATIONS) ?? []).map((statement) => [
          statementLabel(statement),
          'statement (pg_stat_statements)',
          statement.database ?? '',
          statement.walRecords,
          statement.walBytes,
          shareOf(statement.walBytes, window.bytes),
          statement.walFpi,
        ]),
      ],
      chart: {
        data: [{ group: 'window', part: 'WAL (not split)', value: window.bytes }],
        axis: 'relation',
        valueTitle: 'WAL bytes',
      },
      summary: [
        window.statWal
          ? `${size(window.bytes)} of WAL between the two positions; pg_stat_wal counted ${counted(window.statWal.records, 'record')} and ${counted(window.statWal.fpi, 'full-page image')}.`
          : '',
        `The WAL read from ${walSourceText(observation.walSource)}.`,
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
    { group: relationLabel(relation), part: RECORD_BYTES, value: relation.bytes - relation.fpiBytes },
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
        ...(rest.length > 0 ? [{ group: 'other relations', part: RECORD_BYTES, value: restBytes }] : []),
        ...observation.unattributed.map((part) => ({ group: part.kind, part: 'no relation', value: part.bytes })),
      ],
      axis: 'relation',
      valueTitle: 'WAL bytes',
    },
    summary: [
      `${counted(window.records ?? 0, 'record')} from ${counted(observation.relations.length, 'relation')}, ${counted(window.fpiCount ?? 0, 'full-page image')}${reasons ? ` (${integer(reasons.afterCheckpoint.count)} first changes after a checkpoint, ${integer(reasons.hintBits.count)} for hint bits, ${integer(reasons.other.count)} other)` : ''}; the WAL read from ${walSourceText(observation.walSource)}.`,
      transactions
        ? `${counted(transactions.committed, 'commit')}, ${counted(transactions.aborted, 'abort')} (${size(transactions.abortedBytes)} of WAL rolled back).`
        : '',
      ...observation.notes,
    ]
      .filter(Boolean)
      .join(' '),
  }
}
