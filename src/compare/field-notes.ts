import { z } from 'zod'
import { DEFAULT_BATCH_ROWS, DEFAULT_PREFILL_ROWS, MAX_COUNT } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { connectionOptionsSchema, parseOptions } from '../core/options.js'
import { quoteIdent } from '../measure/catalog.js'
import { onDatabase, runSetup } from '../measure/lifecycle.js'
import { compareOnSession, type ScenarioComparison, scenariosOptionsSchema } from './scenarios.js'

/** The field notes' table: ~40 bytes of data a row (32 of column data), three B-tree indexes. */
export const FIELD_NOTES_SCHEMA = 'walcost_demo'
const TABLE = `${FIELD_NOTES_SCHEMA}.device_metrics`

/** Options of {@link fieldNotesExperiment}: the published sizes by default. */
export const fieldNotesOptionsSchema = connectionOptionsSchema.extend({
  prefillRows: z
    .number()
    .int()
    .min(1)
    .max(MAX_COUNT)
    .default(DEFAULT_PREFILL_ROWS)
    .describe('rows in the table before the runs'),
  batchRows: z.number().int().min(1).max(MAX_COUNT).default(DEFAULT_BATCH_ROWS).describe('rows inserted in each run'),
})

export type FieldNotesOptions = z.input<typeof fieldNotesOptionsSchema>

/** DDL and prefill of the field notes' table, in its own schema so a real server is easy to clean. */
export function fieldNotesSetup(prefillRows: number): string {
  return `
    create schema ${FIELD_NOTES_SCHEMA};
    create table ${TABLE} (
      time timestamptz not null, device_id int4 not null, metric_id int4 not null, value float8 not null, extra int8 not null);
    create index device_metrics_time_idx on ${TABLE} (time);
    create index device_metrics_device_id_time_idx on ${TABLE} (device_id, time);
    create index device_metrics_metric_id_time_idx on ${TABLE} (metric_id, time);
    ${fieldNotesInsert(0, prefillRows)};`
}

/** Rows `from + 1 .. from + count` of the field notes' time series: ascending time, 1,000 devices, 50 metrics. */
export function fieldNotesInsert(from: number, count: number, table = TABLE): string {
  return `insert into ${table}
    select timestamptz '2026-01-01 00:00:00+00' + i * interval '10 milliseconds', (i::int8 * 7919 % 1000)::int4, i % 50, i * 0.001, i
      from generate_series(${from + 1}, ${from + count}) i`
}

/** fieldNotesExperiment without the notebook display; the exported entry point is in api.ts. */
export async function fieldNotesExperiment(options: FieldNotesOptions = {}): Promise<ScenarioComparison> {
  const parsed = parseOptions(fieldNotesOptionsSchema, options)
  const { prefillRows, batchRows } = parsed
  return onDatabase(parsed, async (session) => {
    const [existing] = await session.query<{ found: boolean; may_create: boolean; database: string; role: string }>(
      `select to_regnamespace($1) is not null as found, has_database_privilege(current_database(), 'CREATE') as may_create,
              current_database() as database, current_user as role`,
      [FIELD_NOTES_SCHEMA],
    )
    if (existing && !existing.may_create && !existing.found) {
      throw new WalcostError(
        'PERMISSION_DENIED',
        `the demo creates schema ${FIELD_NOTES_SCHEMA} (and drops it at the end), which needs CREATE on the database: GRANT CREATE ON DATABASE ${quoteIdent(existing.database)} TO ${quoteIdent(existing.role)}, or run the demo as a role that has it.`,
        { field: 'db' },
      )
    }
    if (existing?.found) {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `the demo creates schema ${FIELD_NOTES_SCHEMA}, which already exists here; drop it or run the demo on another database.`,
        { field: 'db' },
      )
    }
    let dropped = false
    try {
      await runSetup(session, fieldNotesSetup(prefillRows))
      // Settles the prefill as on a live table: hint bits set, visibility map and statistics current.
      await runSetup(session, `vacuum analyze ${TABLE}`)
      // Each run inserts the next rows of the time series, as the field notes' consecutive batches did.
      const sql = (run: number, table: string) => fieldNotesInsert(prefillRows + run * batchRows, batchRows, table)
      return await compareOnSession(
        session,
        // On a real server each run copies the whole prefill, so that its images are the published table's.
        parseOptions(scenariosOptionsSchema, { table: TABLE, sql, sampleRows: prefillRows, signal: parsed.signal }),
      )
    } catch (error) {
      if (!parsed.signal?.aborted) throw error
      await dropDemoSchema()
      throw new WalcostError(
        'ABORTED',
        session.embedded
          ? 'the demo was stopped; it ran on an embedded PGlite, so nothing was kept.'
          : dropped
            ? `the demo was stopped; schema ${FIELD_NOTES_SCHEMA}, which it created, is dropped, and its runs were rolled back.`
            : `the demo was stopped, but schema ${FIELD_NOTES_SCHEMA}, which it created, could not be dropped: drop schema ${FIELD_NOTES_SCHEMA} cascade.`,
        { cause: error, sqlState: null },
      )
    } finally {
      await dropDemoSchema()
    }

    async function dropDemoSchema() {
      // Twice: a cancel request sent as the run stopped may land on the first attempt.
      for (let attempt = 0; attempt < 2 && !session.embedded && !dropped; attempt++) {
        await session.exec(`drop schema if exists ${FIELD_NOTES_SCHEMA} cascade`).then(
          () => {
            dropped = true
          },
          () => undefined,
        )
      }
    }
  })
}
