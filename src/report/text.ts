import type { IndexAuditResult } from '../compare/audit.js'
import type { AaCheck } from '../compare/comparable.js'
import type { ScenarioComparison } from '../compare/scenarios.js'
import {
  counted,
  formatColumns,
  integer as formatInt,
  oneDecimal as formatOne,
  megabytes,
  percent,
  shareOf as share,
  size,
} from '../core/format.js'
import { partLabel, partsOf } from '../measure/parts.js'
import type { Breakdown, InsertCost } from '../measure/result.js'
import type { SyntheticOrigin } from '../measure/synthetic.js'
import { skippedSteps, walSourceText } from './caveats.js'
import { isNoise, resolutionSentence, serverCostSentences, startingSentence, versusFirst } from './resolution.js'
import { type Result, type View, viewOf } from './views.js'

/** Lays out rows under headers; columns of numbers are right-aligned, the rest left-aligned. */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, column) =>
    Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)),
  )
  const numeric = headers.map(
    (_, column) => column > 0 && rows.every((row) => /^[-+\d.,%x ]*(MB)?$/.test(row[column] ?? '')),
  )
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (numeric[column] ? cell.padStart(widths[column] ?? 0) : cell.padEnd(widths[column] ?? 0)))
      .join('  ')
      .trimEnd()
  return [line(headers), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)].join('\n')
}

/**
 * Several measurements side by side, one row each: the field notes' table.
 *
 * @example
 * console.log(formatScenarios({ 'after-checkpoint': cold, steady: warm }))
 */
export function formatScenarios(scenarios: Record<string, InsertCost>, aa?: AaCheck): string {
  // Other relations get a column only when a scenario wrote to any (a trigger's table, an FK parent).
  const related = Object.values(scenarios).some((cost) => (cost.breakdown?.otherRelationBytes ?? 0) > 0)
  const shares = (
    [
      ['heap', (breakdown) => breakdown.heapBytes],
      ['index', (breakdown) => breakdown.indexBytes],
      ['other rel.', (breakdown) => breakdown.otherRelationBytes],
      ['FPI', (breakdown) => breakdown.fpiBytes],
      ['other', (breakdown) => breakdown.otherBytes],
    ] as Array<[string, (breakdown: Breakdown) => number]>
  ).filter(([name]) => related || name !== 'other rel.')
  const headers = [
    'scenario',
    'rows',
    'WAL records',
    'per row',
    'FPIs',
    'WAL',
    'bytes/row',
    'x data',
    ...(aa ? ['vs first'] : []),
    ...shares.map(([name]) => name),
  ]
  const first = Object.values(scenarios)[0]?.bytesPerRow ?? 0
  const rows = Object.entries(scenarios).map(([label, cost]) => [
    label,
    formatInt(cost.rows),
    formatInt(cost.walRecords),
    cost.rows > 0 && cost.walRecords !== null ? formatOne(cost.walRecords / cost.rows) : '-',
    formatInt(cost.fpiCount),
    megabytes(cost.walBytes),
    formatOne(cost.bytesPerRow),
    cost.amplification === null ? '-' : `${formatOne(cost.amplification)}x`,
    ...(aa ? [versusFirst(first, cost.bytesPerRow, aa)] : []),
    ...shares.map(([, bytes]) => (cost.breakdown ? share(bytes(cost.breakdown), cost.walBytes) : '-')),
  ])
  return renderTable(headers, rows)
}

/** How `count` rows were made, in one line. */
function syntheticSentence(made: SyntheticOrigin): string {
  const list = (columns: string[]) => columns.join(', ')
  const parts = [
    made.fromSample.length > 0
      ? `${list(made.fromSample)} from ${counted(made.sampledRows, 'sampled row')} of the table`
      : 'no rows to sample: every value generated from its type',
    ...(made.fromSample.length > 0 && made.generated.length > 0 ? [`new values in ${list(made.generated)}`] : []),
    ...(made.fromParentKeys.length > 0 ? [`parent keys in ${list(made.fromParentKeys)}`] : []),
  ]
  const keys = made.keys === 'fresh' ? ', unique keys fresh for this call' : ''
  return `rows made with seed ${made.seed}${keys}: ${parts.join('; ')}`
}

/**
 * One measurement as text: totals, the breakdown, each index, and what was skipped.
 *
 * @example
 * console.log(formatInsertCost(await measureInsertCost({ table: 't', count: 1000, setup })))
 */
export function formatInsertCost(cost: InsertCost): string {
  const lines = [
    `${cost.scenario.table}: ${counted(cost.rows, 'row')} (${cost.scenario.batch}, ${cost.scenario.method}${cost.scenario.checkpoint ? ', after CHECKPOINT' : ''}${cost.scenario.droppedIndexes.length ? `, without ${cost.scenario.droppedIndexes.join(', ')}` : ''})`,
    `WAL ${megabytes(cost.walBytes)} in ${cost.walRecords === null ? '-' : counted(cost.walRecords, 'record')}, ${cost.fpiCount === null ? '-' : counted(cost.fpiCount, 'full-page image')}: ${formatOne(cost.bytesPerRow)} bytes/row, ${cost.amplification === null ? '-' : `${formatOne(cost.amplification)}x`} the ${size(cost.logicalBytes)} of column data`,
    `window ${formatInt(cost.windowBytes)} bytes (${cost.window.startLsn} .. ${cost.window.endLsn}), of which other activity ${cost.noiseBytes === null ? 'unknown' : formatInt(cost.noiseBytes)}; attribution: ${cost.attribution}, the WAL read from ${walSourceText(cost.walSource)}`,
  ]
  const made = cost.scenario.synthetic
  if (made) lines.push(syntheticSentence(made))
  const parts = partsOf(cost)
  if (parts) {
    lines.push(
      '',
      renderTable(
        ['part', 'bytes', 'bytes/row', 'share', 'records'],
        parts.map((part) => [
          partLabel(part),
          formatInt(part.bytes),
          cost.rows > 0 ? formatOne(part.bytes / cost.rows) : '-',
          share(part.bytes, cost.walBytes),
          formatInt(part.records),
        ]),
      ),
    )
  }
  if (cost.attributionNote) lines.push('', cost.attributionNote)
  if (cost.notes.length > 0) lines.push('', ...cost.notes)
  lines.push(...skippedSteps([cost]))
  lines.push('', 'settings behind these numbers:', ...cost.configNotes.map((note) => `- ${note}`))
  return lines.join('\n')
}

/**
 * A scenario comparison: the scenarios, then the decomposition and its one-sentence summary.
 *
 * @example
 * console.log(formatComparison(await compareScenarios({ table: 'device_metrics', count: 10_000, setup })))
 */
export function formatComparison(comparison: ScenarioComparison): string {
  const { decomposition } = comparison
  const parts = renderTable(
    ['part', 'bytes/row', 'share'],
    decomposition.parts.map((part) => [
      part.part === 'index' ? `index ${part.name}` : part.name,
      // Read from the runs' differences, a part no larger than the A/A check is noise.
      part.bytesPerRow === null
        ? 'unknown'
        : `${formatOne(part.bytesPerRow)}${decomposition.method === 'differences' && isNoise(part.bytesPerRow, comparison.aa) ? ' (noise)' : ''}`,
      part.share === null ? '-' : `${formatOne(part.share * 100)}%`,
    ]),
  )
  return [
    formatScenarios(comparison.scenarios, comparison.aa),
    '',
    parts,
    '',
    decomposition.summary,
    resolutionSentence(comparison),
    ...comparison.notes,
    ...skippedSteps(Object.values(comparison.scenarios)),
  ].join('\n')
}

/**
 * An index audit: each index's write cost against its use, and what dropping the candidates saves.
 *
 * @example
 * console.log(formatAudit(await auditIndexes({ db: url, table: 'orders' })))
 */
export function formatAudit(audit: IndexAuditResult): string {
  const table = renderTable(
    ['index', 'bytes/row', 'records/row', 'FPI share', 'size', 'scans', 'backs', 'verdict'],
    audit.indexes.map((index) => [
      index.name,
      formatOne(index.walBytesPerRow),
      formatOne(index.recordsPerRow),
      index.fpiShare === null ? '-' : percent(index.fpiShare),
      megabytes(index.sizeBytes),
      formatInt(index.idxScan),
      index.backsConstraint ?? '-',
      index.verdict,
    ]),
  )
  // Never labelled with a condition that did not hold: without CHECKPOINT the first run is just that.
  const when = audit.scenarios['after-checkpoint']
    ? 'after a checkpoint'
    : 'in the first run (its CHECKPOINT was skipped)'
  const lines = [
    `${audit.table}: ${startingSentence(audit)} Usage counters since ${audit.statsSince} (${formatOne(audit.statsAgeDays)} days)`,
    '',
    table,
    '',
    ...audit.indexes.map(
      (index) =>
        `${index.name}: ${index.verdict}: ${index.reason}${index.blocksHot ? ' The sample update sets one of its columns, so it is never HOT.' : ''}`,
    ),
    '',
    `Updates: ${audit.updates.summary}`,
    audit.bytesPerRowWithoutDropCandidates === null
      ? `${formatOne(audit.bytesPerRow)} bytes of WAL a row ${when}; no drop candidates.`
      : `${formatOne(audit.bytesPerRow)} bytes of WAL a row ${when}, ${formatOne(audit.bytesPerRowWithoutDropCandidates)} without the drop candidates.`,
  ]
  if (audit.atRate) {
    lines.push(
      `At ${formatInt(audit.atRate.rowsPerSec)} rows/s: ${formatOne(audit.atRate.walMBps)} MB/s of WAL, ${formatOne(audit.atRate.walMBpsWithoutDropCandidates)} MB/s without the drop candidates (${formatOne(audit.atRate.savedGBPerDay)} GB/day less).`,
    )
  }
  lines.push('', resolutionSentence(audit), ...serverCostSentences(audit.serverCost), ...audit.notes)
  lines.push(...skippedSteps(Object.values(audit.scenarios)))
  return lines.join('\n')
}

/** A view (title, aligned table, summary) as text: the form of results without a formatter of their own. */
function formatView(view: View): string {
  return [
    view.title,
    ...(view.subtitle ? [view.subtitle] : []),
    '',
    renderTable(view.headers, formatColumns(view.rows)),
    '',
    view.summary,
  ].join('\n')
}

/**
 * Any walcost result as text for a terminal: what the CLI prints without --json.
 *
 * @example
 * console.log(formatResult(await compareRemedies({ table: 'orders', count: 10_000, setup })))
 */
export function formatResult(result: Result): string {
  switch (result.kind) {
    case 'insert-cost':
      return formatInsertCost(result)
    case 'scenarios':
      return formatComparison(result)
    case 'index-audit':
      return formatAudit(result)
    default:
      return formatView(viewOf(result))
  }
}
