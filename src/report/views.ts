import type { IndexAuditResult } from '../compare/audit.js'
import type { MigrationComparison } from '../compare/migration.js'
import type { CommitPoint, CommitSizes, RemedyComparison } from '../compare/remedies.js'
import type { ScenarioComparison } from '../compare/scenarios.js'
import type { WriteScenarioComparison } from '../compare/write-scenarios.js'
import { counted, fine, integer, oneDecimal, percent, perSecond, roundOne, size } from '../core/format.js'
import { type Part, partLabel, partsOf } from '../measure/parts.js'
import { changedRows, type InsertCost } from '../measure/result.js'
import type { WriteCost } from '../measure/write.js'
import type { IngestCalibration } from '../model/calibrate-ingest.js'
import type { IngestCeiling } from '../model/ceiling.js'
import type { InsertCostPrediction } from '../model/predict.js'
import type { WalObservation } from '../traffic/observation.js'
import { skippedSteps } from './caveats.js'
import { observationView } from './observation-view.js'
import { isNoise, resolutionSentence, serverCostSentences, versusFirst } from './resolution.js'

/** Every result walcost renders. */
export type Result =
  | InsertCost
  | ScenarioComparison
  | IndexAuditResult
  | RemedyComparison
  | InsertCostPrediction
  | IngestCeiling
  | IngestCalibration
  | MigrationComparison
  | WriteCost
  | WriteScenarioComparison
  | WalObservation

/** One result as a table and a chart: what markdown, HTML, Vega-Lite and Jupyter are drawn from. */
export interface View {
  /** Short enough to print whole above a chart. */
  title: string
  /** The detail a title would be too long with, under it. */
  subtitle?: string
  headers: string[]
  rows: Array<Array<string | number>>
  /**
   * One mark a datum: `group` along the axis, `part` stacked within it, `value` its length; with
   * `compares`, a group's parts are drawn side by side, not stacked: they compare (an estimate
   * beside what was achieved), they do not add up.
   */
  chart: {
    data: Array<{ group: string; part: string; value: number }>
    axis: string
    valueTitle: string
    compares?: boolean
  }
  summary: string
}

const one = (value: number | null) => (value === null ? '' : roundOne(value))
/** Milliseconds to three significant digits: flushes and rows take fractions of one. */
const ms = (value: number) => String(Number(value.toPrecision(3)))

/** Bytes per row of each kind of part (every index as one), for stacked bars. */
function parts(cost: InsertCost): Array<{ part: string; value: number }> {
  const rows = cost.rows || 1
  const split = partsOf(cost)
  if (!split) return [{ part: 'WAL (not split)', value: cost.walBytes / rows }]
  const kinds: Array<[Part['kind'], string]> = [
    ['heap', 'heap'],
    ['index', 'index'],
    ['relation', 'other relations'],
    ['fpi', 'full-page images'],
    ['other', 'other'],
  ]
  return kinds
    .filter(([kind]) => kind !== 'relation' || cost.otherRelations.length > 0)
    .map(([kind, part]) => ({
      part,
      value: split.filter((entry) => entry.kind === kind).reduce((sum, entry) => sum + entry.bytes, 0) / rows,
    }))
}

function insertCostView(cost: InsertCost): View {
  const rows = cost.rows || 1
  const split = partsOf(cost)
  const relations: Array<readonly [string, number | '', number]> = split
    ? split.map(
        (part) =>
          [
            partLabel(part),
            part.kind === 'fpi' ? (cost.fpiCount ?? '') : (part.records ?? ''),
            part.bytes / rows,
          ] as const,
      )
    : [['WAL (not split)', cost.walRecords ?? '', cost.walBytes / rows] as const]
  return {
    title: `${cost.scenario.table}: ${counted(cost.rows, 'row')}, ${cost.scenario.method}${cost.scenario.checkpoint ? ' after CHECKPOINT' : ''}`,
    headers: ['part', 'records', 'bytes/row'],
    rows: relations.map(([name, records, bytes]) => [name, records, one(bytes)]),
    chart: {
      data: relations.map(([name, , value]) => ({ group: cost.scenario.table, part: name, value })),
      axis: 'table',
      valueTitle: 'WAL bytes per row',
    },
    summary: `${one(cost.bytesPerRow)} bytes of WAL a row, ${one(cost.amplification)}x the column data (attribution: ${cost.attribution}).`,
  }
}

function comparisonView(comparison: ScenarioComparison): View {
  const entries = Object.entries(comparison.scenarios)
  return {
    title: 'Scenarios',
    headers: ['scenario', 'rows', 'records/row', 'FPIs', 'bytes/row', 'x data', 'vs first'],
    rows: entries.map(([name, cost], i) => [
      name,
      cost.rows,
      one(cost.walRecords === null ? null : cost.walRecords / (cost.rows || 1)),
      cost.fpiCount ?? '',
      one(cost.bytesPerRow),
      one(cost.amplification),
      i === 0 ? '' : versusFirst(entries[0]?.[1].bytesPerRow ?? 0, cost.bytesPerRow, comparison.aa),
    ]),
    chart: {
      data: entries.flatMap(([name, cost]) => parts(cost).map(({ part, value }) => ({ group: name, part, value }))),
      axis: 'scenario',
      valueTitle: 'WAL bytes per row',
    },
    summary: [
      comparison.decomposition.summary,
      resolutionSentence(comparison),
      ...comparison.notes,
      ...skippedSteps(Object.values(comparison.scenarios)),
    ].join(' '),
  }
}

function auditView(audit: IndexAuditResult): View {
  return {
    title: `Index audit of ${audit.table}`,
    headers: ['index', 'bytes/row', 'records/row', 'FPI share', 'scans', 'backs', 'verdict'],
    rows: audit.indexes.map((index) => [
      index.name,
      one(index.walBytesPerRow),
      one(index.recordsPerRow),
      index.fpiShare === null ? '' : percent(index.fpiShare),
      index.idxScan,
      index.backsConstraint ?? '',
      index.verdict,
    ]),
    chart: {
      data: audit.indexes.flatMap((index) =>
        index.walBytesPerRow === null ? [] : [{ group: index.name, part: index.verdict, value: index.walBytesPerRow }],
      ),
      axis: 'index',
      valueTitle: audit.scenarios['after-checkpoint']
        ? 'WAL bytes per row (after a checkpoint)'
        : 'WAL bytes per row (first run)',
    },
    summary: [
      audit.bytesPerRowWithoutDropCandidates === null
        ? `${one(audit.bytesPerRow)} bytes of WAL a row; no drop candidates.`
        : `${one(audit.bytesPerRow)} bytes of WAL a row, ${one(audit.bytesPerRowWithoutDropCandidates)} without the drop candidates.`,
      `Updates: ${audit.updates.summary}`,
      resolutionSentence(audit),
      ...serverCostSentences(audit.serverCost),
      ...audit.notes,
      ...skippedSteps(Object.values(audit.scenarios)),
    ].join(' '),
  }
}

function predictionView(prediction: InsertCostPrediction): View {
  const relations: Array<[string, number, number]> = [
    ['heap', prediction.heap.recordsPerRow, prediction.heap.bytesPerRow],
    ...prediction.indexes.map((index): [string, number, number] => [
      `index ${index.name}`,
      index.recordsPerRow,
      index.bytesPerRow,
    ]),
    ...(prediction.breakdown.fpiBytes > 0
      ? [['full-page images', 0, prediction.breakdown.fpiBytes] as [string, number, number]]
      : []),
    ['other', 0, prediction.breakdown.otherBytes],
  ]
  return {
    title: `Predicted for ${prediction.table} (${prediction.method})`,
    headers: ['part', 'records/row', 'bytes/row'],
    rows: relations.map(([name, records, bytes]) => [name, one(records), one(bytes)]),
    chart: {
      data: relations.map(([name, , value]) => ({ group: prediction.table, part: name, value })),
      axis: 'table',
      valueTitle: 'predicted WAL bytes per row',
    },
    summary: `${one(prediction.bytesPerRow)} bytes of WAL a row predicted in steady state, ${one(prediction.amplification)}x the column data.`,
  }
}

/** How the ceiling compares with the target, in words: a ratio like 0.0018x is hard to read. */
function headroomClause(headroom: number | null): string {
  if (headroom === null) return ''
  if (headroom >= 1) return `: ${oneDecimal(headroom)}x the target`
  // A tenth where it tells (1.5x, not 2x); whole numbers where it would only add digits (550x).
  const needed = 1 / headroom
  return `: the target needs ${needed < 10 ? oneDecimal(needed) : integer(needed)}x that`
}

function ceilingView(ceiling: IngestCeiling): View {
  const limits = Object.entries(ceiling.limits)
  const cores = ceiling.cores === null ? '' : `, ${counted(ceiling.cores, 'core')}`
  // The table gives each limit on its own; the ceiling is lower where the connections also wait
  // for one another: the headline says both, so that they do not seem to disagree.
  const alone = ceiling.limits[ceiling.bindingLimit]
  const cycle =
    alone !== null && integer(ceiling.maxRowsPerSec) !== integer(alone)
      ? ` (${integer(alone)} rows/s on its own, as in the table; less here, since each connection waits for its ${ms(ceiling.flushMs)} ms flush after its ${ms(ceiling.transactionMs ?? 0)} ms transaction)`
      : ''
  const unknown = ceiling.limits['server CPU'] === null ? '; server CPU unknown (no server time a row)' : ''
  return {
    title: `Ingest ceiling on ${ceiling.storageName === 'custom' ? `storage of ${integer(ceiling.storage.writeMBps)} MB/s, ${integer(ceiling.storage.iops)} IOPS, ${ceiling.storage.fsyncMs} ms a flush` : ceiling.storageName}, ${counted(ceiling.rowsPerCommit, 'row')} a commit, ${counted(ceiling.connections, 'connection')}${cores}: ${one(ceiling.bytesPerRow)} bytes of WAL a row`,
    headers: ['limit', 'rows/s'],
    rows: limits.map(([name, rate]) => [name, rate === null ? '-' : integer(rate)]),
    chart: {
      data: limits
        .filter((entry): entry is [string, number] => entry[1] !== null)
        .map(([name, value]) => ({
          group: name,
          part: name === ceiling.bindingLimit ? 'binds first' : 'limit',
          value,
        })),
      axis: 'limit',
      valueTitle: 'rows per second',
    },
    summary: `${integer(ceiling.maxRowsPerSec)} rows/s at most, bound by ${ceiling.bindingLimit}${cycle}${headroomClause(ceiling.headroom)}${unknown}; ${perSecond(ceiling.walMBps)} of WAL (${oneDecimal(ceiling.walGBPerDay)} GB/day) at ${integer(ceiling.atRowsPerSec)} rows/s${ceiling.headroom === null ? ', the ceiling' : ', the target'}.`,
  }
}

function calibrationView(calibration: IngestCalibration): View {
  const label = (run: IngestCalibration['runs'][number]) =>
    `${counted(run.rowsPerCommit, 'row')} a commit, ${counted(run.connections, 'connection')}`
  return {
    title: `Ingest calibrated on a scratch copy of ${calibration.table}`,
    subtitle: `${ms(calibration.storage.fsyncMs)} ms a flush, ${integer(calibration.storage.writeMBps)} MB/s, ${ms(calibration.msPerRow)} ms a row, ${ms(calibration.commitMs)} ms a commit, ${ms(calibration.clientMsPerRow)} ms of this client's CPU a row and ${ms(calibration.clientMsPerCommit)} ms a commit, ${integer(calibration.parallelism.parallelRowsPerSec)} rows/s from ${calibration.parallelism.connections} sessions at once (${calibration.parallelism.speedup.toFixed(2)}x one)`,
    headers: ['run', 'rows/s', 'estimate', 'estimate / achieved', 'binding limit', 'commits a flush', 'ms a flush'],
    rows: calibration.runs.map((run) => [
      label(run),
      integer(run.rowsPerSec),
      integer(run.estimatedRowsPerSec),
      run.ratio.toFixed(2),
      run.bindingLimit,
      run.commitsPerFlush.toFixed(2),
      ms(run.flushMs),
    ]),
    chart: {
      data: calibration.runs.flatMap((run) => [
        { group: label(run), part: 'achieved', value: run.rowsPerSec },
        { group: label(run), part: 'estimated', value: run.estimatedRowsPerSec },
      ]),
      axis: 'run',
      valueTitle: 'rows per second',
      compares: true,
    },
    summary: [
      `The model's estimates were within ${integer(100 * calibration.worstError)}% of the runs.`,
      ...calibration.notes,
    ].join(' '),
  }
}

/** What commits add, from the smallest commit to the largest. */
function commitSentences(sizes: CommitSizes): string[] {
  const [single] = sizes.points
  const largest = sizes.points.at(-1)
  if (!single || !largest) return []
  const { cost } = sizes
  const flushes = (writes: number | null, syncs: number | null) =>
    writes === null || syncs === null ? '' : `, ${fine(writes)} WAL writes and ${fine(syncs)} fsyncs`
  const per = (point: CommitPoint) =>
    `${fine(point.bytesPerRow)} bytes of WAL${flushes(point.writesPerRow, point.syncsPerRow)} a row`
  return [
    `Each commit wrote ${oneDecimal(cost.walBytesPerCommit)} bytes of WAL${flushes(cost.writesPerCommit, cost.syncsPerCommit)} (${integer(cost.commits)} real commits that only took a transaction id, synchronous_commit ${cost.synchronousCommit}; WAL writes and fsyncs ${cost.countsNote}): committing every row costs ${per(single)}; every ${integer(largest.rowsPerCommit)} rows, ${per(largest)}.`,
  ]
}

function remediesView(comparison: RemedyComparison): View {
  const { baseline, remedies } = comparison
  return {
    title: `Remedies for ${baseline.scenario.table} (${counted(baseline.rows, 'row')}${baseline.scenario.checkpoint ? ' after a checkpoint' : ', CHECKPOINT skipped'})`,
    headers: ['remedy', 'risk', 'bytes/row', 'saving', 'time', 'how obtained'],
    rows: [
      ['baseline', '', one(baseline.bytesPerRow), '', '1x', 'measured'],
      ...comparison.remedies.map((remedy) => [
        remedy.name,
        remedy.risk,
        one(remedy.bytesPerRow),
        remedy.savingPct === null
          ? ''
          : `${Math.round(remedy.savingPct)}%${remedy.measured && isNoise((baseline.bytesPerRow ?? 0) - (remedy.bytesPerRow ?? 0), comparison.aa) ? ' (noise)' : ''}`,
        remedy.timeRatio === null ? '' : `${remedy.timeRatio.toFixed(1)}x`,
        remedy.available ? (remedy.measured ? 'measured' : 'derived') : 'unavailable',
      ]),
    ],
    chart: {
      data: [
        { group: 'baseline', part: 'baseline', value: baseline.bytesPerRow ?? 0 },
        ...remedies
          .filter((remedy) => remedy.bytesPerRow !== null)
          .map((remedy) => ({ group: remedy.name, part: remedy.kind, value: remedy.bytesPerRow as number })),
      ],
      axis: 'remedy',
      valueTitle: 'WAL bytes per row',
    },
    summary: [
      remedies[0]?.available
        ? `Largest saving: ${remedies[0].name}, ${Math.round(remedies[0].savingPct ?? 0)}% (risk ${remedies[0].risk} of 4).`
        : 'No remedy could be measured.',
      resolutionSentence(comparison),
      ...serverCostSentences(comparison.serverCost),
      ...commitSentences(comparison.commitSizes),
      ...remedies
        .filter((remedy) => !remedy.available)
        .map((remedy) => `${remedy.name} is unavailable: ${remedy.how}.`),
      ...skippedSteps([baseline]),
    ].join(' '),
  }
}

/** A write's cost as an insert's, per row changed: an update or a delete inserts no row. */
const perRowChanged = (cost: WriteCost): InsertCost => ({
  ...cost,
  kind: 'insert-cost',
  rows: changedRows(cost.writes),
})

function writeCostView(cost: WriteCost): View {
  const { inserted, updated, hotUpdated, deleted } = cost.writes
  const view = insertCostView(perRowChanged(cost))
  const done = [
    inserted > 0 ? `${counted(inserted, 'row')} inserted` : '',
    updated > 0 ? `${counted(updated, 'row')} updated (${integer(hotUpdated)} HOT)` : '',
    deleted > 0 ? `${counted(deleted, 'row')} deleted` : '',
  ].filter(Boolean)
  return {
    ...view,
    title: `${cost.scenario.table}: ${done.join(', ') || 'no rows changed'}`,
    summary: [
      `${cost.bytesPerModifiedRow === null ? '-' : oneDecimal(cost.bytesPerModifiedRow)} bytes of WAL a row changed (attribution: ${cost.attribution}).`,
      ...(cost.updates ? [cost.updates.explanation] : []),
      ...(cost.deferred
        ? [
            `Deferred: the VACUUM after it commits writes ${size(cost.deferred.vacuumWalBytes)} of WAL in ${counted(cost.deferred.vacuumRecords, 'record')} (${counted(cost.deferred.vacuumFpiCount, 'full-page image')}), ${oneDecimal(cost.deferred.bytesPerChangedRow)} bytes a row updated or deleted (measured on a clone).`,
          ]
        : []),
    ].join(' '),
  }
}

function writeScenariosView(comparison: WriteScenarioComparison): View {
  const entries = Object.entries(comparison.scenarios)
  const first = entries[0]?.[1].bytesPerModifiedRow ?? 0
  return {
    title: 'Write scenarios, each after a checkpoint',
    headers: ['scenario', 'rows changed', 'HOT', 'records/row', 'FPIs', 'bytes/row', 'vs first'],
    rows: entries.map(([name, cost], i) => {
      const changed = perRowChanged(cost).rows
      return [
        name,
        changed,
        cost.writes.updated > 0 ? percent(cost.writes.hotUpdated / cost.writes.updated) : '',
        one(cost.walRecords === null ? null : cost.walRecords / (changed || 1)),
        cost.fpiCount ?? '',
        one(cost.bytesPerModifiedRow),
        i === 0 ? '' : versusFirst(first, cost.bytesPerModifiedRow, comparison.aa),
      ]
    }),
    chart: {
      data: entries.flatMap(([name, cost]) =>
        parts(perRowChanged(cost)).map(({ part, value }) => ({ group: name, part, value })),
      ),
      axis: 'scenario',
      valueTitle: 'WAL bytes per row changed',
    },
    summary: [comparison.summary, resolutionSentence(comparison), ...comparison.notes].join(' '),
  }
}

function migrationView(comparison: MigrationComparison): View {
  const bytes = (value: number | null) => (value === null ? '' : one(value))
  return {
    title: `Migration of ${comparison.table}: WAL a row before and after`,
    headers: ['part', 'before', 'after', 'change', '%', 'resolution'],
    rows: comparison.changes.map((entry) => [
      entry.part,
      bytes(entry.before),
      bytes(entry.after),
      entry.noise ? 'no change' : `${entry.change > 0 ? '+' : ''}${oneDecimal(entry.change)}`,
      entry.noise
        ? ''
        : entry.changePct === null
          ? entry.before === null
            ? 'new'
            : ''
          : `${entry.changePct > 0 ? '+' : ''}${oneDecimal(entry.changePct)}%`,
      `±${oneDecimal(entry.resolution)}`,
    ]),
    chart: {
      data: (['before', 'after'] as const).flatMap((state) =>
        parts(comparison[state]).map(({ part, value }) => ({ group: state, part, value })),
      ),
      axis: 'state',
      valueTitle: 'WAL bytes per row',
    },
    summary: [comparison.summary, resolutionSentence(comparison), ...comparison.notes].join(' '),
  }
}

/** The view of any walcost result. */
export function viewOf(result: Result): View {
  switch (result.kind) {
    case 'insert-cost':
      return insertCostView(result)
    case 'scenarios':
      return comparisonView(result)
    case 'index-audit':
      return auditView(result)
    case 'remedies':
      return remediesView(result)
    case 'prediction':
      return predictionView(result)
    case 'ceiling':
      return ceilingView(result)
    case 'ingest-calibration':
      return calibrationView(result)
    case 'migration':
      return migrationView(result)
    case 'write-cost':
      return writeCostView(result)
    case 'write-scenarios':
      return writeScenariosView(result)
    case 'wal-observation':
      return observationView(result)
  }
}
