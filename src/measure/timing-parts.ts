import { TIMING_PROBE_ROWS, TIMING_PROBE_ROWS_PER_STATEMENT } from '../core/defaults.js'
import type { ParsedMeasureOptions } from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { prepareBatch, runBatch } from './batch.js'
import { resolveRelation, withKeys } from './catalog.js'
import type { InsertCost, TimingParts } from './result.js'

/** How a batch sends its rows. */
export type SendMethod = ParsedMeasureOptions['method']

/** Statements a batch of `rows` rows sends by `method`, `rowsPerStatement` at a time where it sends several. */
export function statementsFor(method: SendMethod, rows: number, rowsPerStatement: number): number {
  if (rows === 0) return 0
  if (method === 'copy') return 1
  return method === 'multirow' ? Math.ceil(rows / rowsPerStatement) : rows
}

/**
 * What a batch's time is made of, apart from how it was sent: a statement's own time (its round
 * trip, parse, plan and executor start) and a row's time inside INSERT ... VALUES and inside COPY.
 * One batch cannot tell its statements' time from its rows': a probe can. The same synthetic rows
 * are sent three ways on the same connection, each rolled back, twice over (the faster of each
 * kept, as other work on the machine slows one now and then): one INSERT a row, several rows an
 * INSERT, and one COPY. One row an INSERT and several an INSERT differ only in their statements:
 * that difference is the statement's time; what is left is the row's. The batch's own time then
 * gives its method's time a row at its own size (measured), and the probe's ratio the other's
 * (derived).
 */
export async function timingParts(
  session: Session,
  options: ParsedMeasureOptions,
  cost: InsertCost,
): Promise<TimingParts | null> {
  const { batch, method, batchSize } = cost.scenario
  if ((batch !== 'count' && batch !== 'rows') || !cost.rows) return null
  const table = await withKeys(session, await resolveRelation(session, options.table))
  const rows = TIMING_PROBE_ROWS
  const perStatement = TIMING_PROBE_ROWS_PER_STATEMENT
  const probe = async (sendBy: SendMethod) => {
    const probeOptions = { ...options, count: rows, rows: undefined, method: sendBy, batchSize: perStatement }
    const prepared = await prepareBatch(session, table, probeOptions)
    return rolledBack(session, 'transaction', async () => {
      const began = performance.now()
      await runBatch(session, table, prepared, probeOptions, 0)
      return performance.now() - began
    })
  }
  const fastest = {
    insert: Number.POSITIVE_INFINITY,
    multirow: Number.POSITIVE_INFINITY,
    copy: Number.POSITIVE_INFINITY,
  }
  for (let round = 0; round < 2; round++) {
    for (const sendBy of ['insert', 'multirow', 'copy'] as const) {
      fastest[sendBy] = Math.min(fastest[sendBy], await probe(sendBy))
    }
  }
  // One row an INSERT pays a statement a row; several rows an INSERT, one a perStatement rows.
  const msPerStatement = Math.max(0, (fastest.insert - fastest.multirow) / (rows - rows / perStatement))
  const probeInsertRow = positive(fastest.insert / rows - msPerStatement)
  const probeCopyRow = positive((fastest.copy - msPerStatement) / rows)
  // The batch's own rows, less its statements' time: its method's time a row, at its size.
  const statements = statementsFor(method, cost.rows, batchSize)
  const own = (cost.timing.batchMs - statements * msPerStatement) / cost.rows
  const byCopy = method === 'copy'
  const ownRow = own > 0 ? own : byCopy ? probeCopyRow : probeInsertRow
  return {
    msPerStatement,
    insertMsPerRow: byCopy ? (ownRow * probeInsertRow) / probeCopyRow : ownRow,
    copyMsPerRow: byCopy ? ownRow : (ownRow * probeCopyRow) / probeInsertRow,
    measured: byCopy ? 'copyMsPerRow' : 'insertMsPerRow',
    probe: {
      rows,
      rowsPerStatement: perStatement,
      insertMs: fastest.insert,
      multirowMs: fastest.multirow,
      copyMs: fastest.copy,
    },
  }
}

/** A time a row too small for a clock to tell from none still divides. */
const positive = (ms: number) => Math.max(ms, 1e-6)
