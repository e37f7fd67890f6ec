import type pg from 'pg'
import { counted, integer } from '../src/core/format.js'
import { fieldNotesSetup } from '../src/index.js'
import { GIN_TABLE, ginIngestCase, ginTableSetup } from '../test/support/gin-ingest.js'
import { ingestCases, MEASUREMENT_METHODS } from '../test/support/ingest-cases.js'
import { quick, ratio, results, rows } from './common.js'

/**
 * estimateIngestCeiling against a real committed ingest: the field notes' table, calibrateIngest's
 * runs at 1, 100 and 1,000 rows a commit from 1 and 4 connections, and each estimate from a
 * measurement of the table by each method (INSERT, multi-row INSERT, COPY), calibrateStorage's flush time and the cores the server and this process
 * had over the runs (the machine's, less what other processes took).
 */
export async function ceiling(url: string, client: pg.Client) {
  await client.query('alter system set track_wal_io_timing = on')
  await client.query('select pg_reload_conf()')
  try {
    await client.query(fieldNotesSetup(200_000))
    await client.query('vacuum analyze walcost_demo.device_metrics')
    // Quick: one round of each calibration run and measurement, so that the section runs, not that it holds.
    const rounds = quick ? 1 : 3
    const { cases, calibration, costs, fsyncMs, cores } = await ingestCases(url, 'walcost_demo.device_metrics', {
      rounds,
    })
    const parts = Object.fromEntries(MEASUREMENT_METHODS.map((method) => [method, costs[method].timing.parts]))
    results.ceiling = { parts, fsyncMs, cores, calibration, cases }
    for (const entry of cases) {
      rows.push({
        section: 'ceiling',
        measure: `estimate / achieved from a measurement by INSERT, multi-row INSERT, COPY; ${counted(entry.rowsPerCommit, 'row')} a commit x ${counted(entry.connections, 'connection')} (${Math.round(entry.achieved).toLocaleString('en-US')} rows/s achieved; ${entry.byMethod.copy.binding} binds)`,
        value: MEASUREMENT_METHODS.map((method) => ratio(entry.byMethod[method].ratio)).join(', '),
        target: quick ? '-' : '0.75-1.25x each',
      })
    }
    rows.push({
      section: 'ceiling',
      measure: "the three methods' ceilings, highest / lowest, in the case where they differ most",
      value: ratio(Math.max(...cases.map((entry) => entry.spread))),
      target: quick ? '-' : '<= 1.10x',
    })
    await client.query(ginTableSetup(quick ? 20_000 : 100_000))
    const gin = await ginIngestCase(url, { rounds })
    results.ceilingGin = {
      suggested: gin.suggested,
      shortRatio: gin.shortRatio,
      rounds: gin.rounds.map(({ cost, plainMsPerRow, achieved, estimate, ratio }) => ({
        msPerRow: cost.timing.msPerRow,
        plainMsPerRow,
        achieved,
        estimate,
        ratio,
      })),
    }
    rows.push({
      section: 'ceiling',
      measure: `estimate / achieved, jsonb under GIN with pending lists, 60,000 rows committed 1,000 a commit x 1 connection, from the ${integer(gin.suggested)}-row batch the notes name (from the default 10,000 rows: ${ratio(gin.shortRatio)})`,
      value: ratio(gin.ratio),
      target: quick ? '-' : '0.75-1.25x',
    })
  } finally {
    await client.query('drop schema if exists walcost_demo cascade')
    await client.query(`drop table if exists ${GIN_TABLE}`)
    await client.query('alter system reset track_wal_io_timing')
    await client.query('select pg_reload_conf()')
  }
}
