import { TIMING_PROBE_ROWS, TIMING_PROBE_ROWS_PER_STATEMENT } from '../core/defaults.js'
import type { ParsedMeasureOptions } from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { prepareBatch, runBatch } from './batch.js'
import { resolveRelation, withKeys } from './catalog.js'
import type { InsertCost, TimingParts } from './result.js'
import { readSyntheticStart } from './synthetic.js'

/** How a batch sends its rows. */
export type SendMethod = ParsedMeasureOptions['method']

/** Statements a batch of `rows` rows sends by `method`, `rowsPerStatement` at a time where it sends several. */
export function statementsFor(method: SendMethod, rows: number, rowsPerStatement: number): number {
  if (rows === 0) return 0
  if (method === 'copy') return 1
  return method === 'multirow' ? Math.ceil(rows / rowsPerStatement) : rows
}

/** One way the probe sends its rows: how, how many, how many a statement. */
interface ProbeShape {
  method: SendMethod
  rows: number
  rowsPerStatement: number
}

/**
 * Each shape twice, to solve for a statement's time and a row's by INSERT and by COPY: one row an
 * INSERT and fifty an INSERT differ in their statements; two COPYs of different sizes in their rows.
 */
const PROBE: readonly ProbeShape[] = [
  { method: 'insert', rows: TIMING_PROBE_ROWS / 10, rowsPerStatement: 1 },
  { method: 'multirow', rows: TIMING_PROBE_ROWS, rowsPerStatement: TIMING_PROBE_ROWS_PER_STATEMENT },
  { method: 'copy', rows: TIMING_PROBE_ROWS / 10, rowsPerStatement: TIMING_PROBE_ROWS / 10 },
  { method: 'copy', rows: TIMING_PROBE_ROWS, rowsPerStatement: TIMING_PROBE_ROWS },
]

/**
 * What a batch's time is made of, apart from how it was sent: an INSERT's and a COPY's own time
 * (round trip, parse, plan, executor start; a COPY's start and end) and a row's time inside each.
 * One batch cannot tell its statements' time from its rows': a probe can. Synthetic rows are sent
 * in the four shapes of PROBE on the same connection, each rolled back, in two rounds (the faster
 * of each kept, as other work on the machine slows one now and then, and the first round warms
 * the caches), its rows made once before any clock starts. Two
 * equations a method give its statement's time and its row's.
 */
export async function timingParts(
  session: Session,
  options: ParsedMeasureOptions,
  cost: InsertCost,
): Promise<TimingParts | null> {
  const { batch, method, batchSize } = cost.scenario
  if ((batch !== 'count' && batch !== 'rows') || !cost.rows) return null
  const table = await withKeys(session, await resolveRelation(session, options.table))
  const start = await readSyntheticStart(session, table)
  // Each shape's rows are made once, before any clock starts: making them is the client's work, not
  // the server's. Both rounds send the same rows (each round is rolled back).
  const shapes = await Promise.all(
    PROBE.map(async (shape) => {
      const shapeOptions = {
        ...options,
        rows: undefined,
        count: shape.rows,
        method: shape.method,
        batchSize: shape.rowsPerStatement,
      }
      const prepared = await prepareBatch(session, table, shapeOptions, start)
      const made: Array<Array<string | null>> = []
      for await (const values of prepared.values()) made.push(values)
      return { options: shapeOptions, batch: { ...prepared, values: () => asyncOf(made) } }
    }),
  )
  const timed = ({ options: shapeOptions, batch: shapeBatch }: (typeof shapes)[number]) =>
    rolledBack(session, 'transaction', async () => {
      const began = performance.now()
      await runBatch(session, table, shapeBatch, shapeOptions, 0)
      return performance.now() - began
    })
  const fastest = PROBE.map(() => Number.POSITIVE_INFINITY)
  for (let round = 0; round < 2; round++) {
    for (const [index, shape] of shapes.entries()) fastest[index] = Math.min(fastest[index] ?? 0, await timed(shape))
  }
  const [single = 0, multi = 0, smallCopy = 0, copy = 0] = fastest
  const [singleShape, multiShape, smallCopyShape, copyShape] = PROBE as [ProbeShape, ProbeShape, ProbeShape, ProbeShape]
  // single = n1 (s + r); multi = n2 / k s + n2 r: the statement s and the row r.
  const multiStatements = statementsFor('multirow', multiShape.rows, multiShape.rowsPerStatement)
  const probeInsertRow = positive(
    (multi - (multiStatements * single) / singleShape.rows) / (multiShape.rows - multiStatements),
  )
  const msPerStatement = Math.max(0, single / singleShape.rows - probeInsertRow)
  // Two COPYs: the row from their difference, the statement from what is left.
  const probeCopyRow = positive((copy - smallCopy) / (copyShape.rows - smallCopyShape.rows))
  const copyMsPerStatement = Math.max(0, smallCopy - smallCopyShape.rows * probeCopyRow)
  // The batch's own time gives the part that makes most of it, at the batch's size (a row of a
  // large COPY or many rows an INSERT, in deeper indexes than the probe's; a statement of one
  // INSERT a row): that part is the batch's time less the other part as the probe timed it. The
  // same part of the other method is scaled alike; the other part is the probe's. A part that is
  // a small share of a batch cannot be told from the batch's noise.
  const byCopy = method === 'copy'
  const statements = statementsFor(method, cost.rows, batchSize)
  const statementMs = statements * (byCopy ? copyMsPerStatement : msPerStatement)
  const rowsMs = cost.rows * (byCopy ? probeCopyRow : probeInsertRow)
  const measured: TimingParts['measured'] = statementMs > rowsMs ? 'statements' : 'rows'
  const rest = cost.timing.batchMs - (measured === 'rows' ? statementMs : rowsMs)
  const probed = measured === 'rows' ? rowsMs : statementMs
  const scale = rest > 0 && probed > 0 ? rest / probed : 1
  const statementScale = measured === 'statements' ? scale : 1
  const rowScale = measured === 'rows' ? scale : 1
  return {
    msPerStatement: msPerStatement * statementScale,
    copyMsPerStatement: copyMsPerStatement * statementScale,
    insertMsPerRow: probeInsertRow * rowScale,
    copyMsPerRow: probeCopyRow * rowScale,
    measured,
    scale,
    probe: PROBE.map((shape, index) => ({ ...shape, ms: fastest[index] ?? 0 })),
  }
}

async function* asyncOf<T>(items: T[]): AsyncGenerator<T> {
  yield* items
}

/** A time a row too small for a clock to tell from none still divides. */
const positive = (ms: number) => Math.max(ms, 1e-6)
