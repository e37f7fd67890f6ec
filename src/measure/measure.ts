import { fromServerError, isConnectionError, throwIfAborted, WalcostError } from '../core/errors.js'
import { counted } from '../core/format.js'
import { type MeasureOptions, measureOptionsSchema, type ParsedMeasureOptions, parseOptions } from '../core/options.js'
import { formatLsn } from '../decode/reader.js'
import { type Enclosing, rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { readTally, readWindow, type WindowAttribution, type WindowTally } from '../wal/attribution.js'
import { followWal, WINDOW_END_MARK } from '../wal/follow.js'
import { configNotes } from '../wal/notes.js'
import { readServer, readWalAdvice, type Server, walLayout } from '../wal/server.js'
import {
  flushesInTransaction,
  insertPosition,
  readStatWal,
  statWalDifference,
  type WalPosition,
  waitForFlush,
} from '../wal/snapshot.js'
import { attributeWithWalinspect } from '../wal/walinspect.js'
import { givenBatch, HELD_XIDS_SQL, type PreparedBatch, prepareBatch, runBatch } from './batch.js'
import { type Index, quoteIdent, resolveRelation, type Table, type TableRelation, withKeys } from './catalog.js'
import { type LogicalBytes, readLogicalBytes } from './data-bytes.js'
import { onDatabase } from './lifecycle.js'
import { pendingListNotes } from './pending-list.js'
import type {
  BatchTiming,
  Breakdown,
  IndexCost,
  InsertCost,
  OtherRelationCost,
  RecordTypeCost,
  RelationCost,
  Skipped,
  Writes,
} from './result.js'
import type { SyntheticStart } from './synthetic.js'
import { statementsFor, timingParts } from './timing-parts.js'

/** measureInsertCost without the notebook display; the exported entry point is in api.ts. */
export async function measureInsertCost(options: MeasureOptions): Promise<InsertCost> {
  const began = performance.now()
  const parsed = parseOptions(measureOptionsSchema, options)
  return timedCall(
    began,
    await onDatabase(parsed, async (session) => {
      const cost = await measureOnSession(session, parsed)
      if (!parsed.timingProbe) return cost
      return { ...cost, timing: { ...cost.timing, parts: await timingParts(session, parsed, cost) } }
    }),
  )
}

/** A result of a whole call, with the call's time in its timing. */
export function timedCall<Cost extends { timing: BatchTiming }>(began: number, cost: Cost): Cost {
  return { ...cost, timing: { ...cost.timing, callMs: Math.round(performance.now() - began) } }
}

/**
 * How one measurement relates to what runs around it.
 * - `enclosing`: 'transaction' (the default) wraps it in BEGIN/ROLLBACK; 'savepoint' in a
 *   SAVEPOINT rolled back inside a transaction the caller holds open (a scratch table lives there).
 * - `syntheticStart`: where `count` rows start, read once for several measurements.
 * - `run`: the measurement's position in a series (0 first), passed to an `sql` function so that
 *   it can continue its keys from run to run, as consecutive production batches would (`count`
 *   rows do the same through syntheticStart.firstRow).
 */
export interface MeasureContext {
  enclosing?: Enclosing
  syntheticStart?: SyntheticStart
  run?: number
  /** Settings for the measuring transaction only (SET LOCAL), e.g. { wal_compression: 'lz4' }. */
  settings?: Record<string, string>
}

interface Window {
  start: WalPosition
  end: WalPosition
  /** Our top-level xid and those of our open subtransactions: the records that are ours. */
  xids: string[]
  /** The last checkpoint's redo point moved into the window: a checkpoint completed during it. */
  redoMoved: boolean
  relfilenodes: Map<string, string | null>
  logical: LogicalBytes
  writes: Writes
  droppedIndexes: string[]
  checkpointed: boolean
  /** The window's WAL, where it was read before the rollback (by the companion session, or on PGlite). */
  attribution: WindowAttribution | null
  batchMs: number
}

/** One measurement on an open session: prepare, snapshot, batch, snapshot, read back, roll back, attribute. */
export async function measureOnSession(
  session: Session,
  options: ParsedMeasureOptions,
  context: MeasureContext = {},
): Promise<InsertCost> {
  const began = performance.now()
  const enclosing = context.enclosing ?? 'transaction'
  const server = await readServer(session)
  // Only generated rows follow the columns' statistics.
  const relation = await resolveRelation(session, options.table, { statistics: options.count !== undefined })
  // A given batch (SQL, the app's code) that drops no index needs neither indexes nor foreign keys:
  // two catalog reads fewer.
  const given = givenBatch(options)
  const table = given && options.dropIndexes === false ? null : await withKeys(session, relation)
  const toDrop = table ? indexesToDrop(table, options.dropIndexes) : []
  const run = context.run ?? 0
  const batch = table ? await prepareBatch(session, table, options, context.syntheticStart) : (given as PreparedBatch)
  const skipped: Skipped[] = []
  if (options.checkpoint && !server.capabilities.checkpoint) {
    skipped.push({
      step: 'checkpoint',
      reason:
        'CHECKPOINT needs superuser or, on PostgreSQL 15+, membership in pg_checkpoint: GRANT pg_checkpoint TO the role. Full-page images were not forced.',
    })
  }
  throwIfAborted(options.signal)
  // A backend's own WAL counters reach pg_stat_wal only outside a transaction: inside one the
  // difference would miss our own records, so it is not reported.
  const statBefore = enclosing === 'transaction' ? await readStatWal(session, server) : null
  const [size] = await session.query<{ bytes: string }>('select pg_total_relation_size($1::oid)::text as bytes', [
    relation.oid,
  ])
  const settings = context.settings ?? {}
  const window = await rolledBack(
    session,
    enclosing,
    () => measureWindow(session, server, relation, batch, options, toDrop, run),
    settings,
  )
  if (!window.attribution)
    await waitForFlush(session, server, window.end, options.flushTimeoutMs, enclosing === 'savepoint')
  const statWal = statBefore ? statWalDifference(statBefore, await readStatWal(session, server)) : null

  const reading = await readBack(session, server, window, enclosing)
  const attribution = reading.attribution
  if (reading.method === 'lsn') skipped.push({ step: 'attribution', reason: reading.note })
  // Only the app's code can write through a connection of its own; for the other batches, another
  // transaction's commit is another session's.
  const escaped = batch.kind === 'run' ? escapedWrites(attribution, window.relfilenodes) : null
  const { inserted, updated, deleted } = window.writes
  if (inserted + updated + deleted === 0) {
    throw escaped
      ? new WalcostError(
          'BATCH_ESCAPED_TRANSACTION',
          `the run callback wrote no row of ${relation.quoted} in walcost's transaction, but while it ran ${escapedWords(escaped, relation.quoted)} Nothing was measured. Write through the connection run is handed (run: (db) => insertOrders(db, rows), drizzle(db)), not one the code opens itself (new pg.Client(), the app's own pool); and remove the committed rows if they should not stay.`,
          { field: 'run' },
        )
      : wroteNothing(batch, relation.quoted)
  }

  const windowBytes = window.end.bytes - window.start.bytes
  const checkpointDuringWindow = window.redoMoved || (attribution?.checkpointRecords ?? 0) > 0
  const notes = [
    ...persistenceNotes(relation),
    ...(checkpointDuringWindow
      ? [
          'A checkpoint ran during the measurement: pages the batch changed after it logged full-page images again, so this is not a steady-state reading. Measure again, or compare fpiCount with a run that had none.',
        ]
      : []),
    // Where the run callback's own connection wrote, that is who changed the table, not autovacuum.
    ...(escaped
      ? [
          `While the run callback ran, ${escapedWords(escaped, relation.quoted)} This measurement counts only what the run callback wrote through the connection it was handed; pages the other connection changed first logged their images there, so fpiCount may be lower than the batch alone would log.`,
        ]
      : interferenceNotes(attribution, window.relfilenodes)),
  ]
  const otherNames = await nameOtherRelations(session, attribution, window.relfilenodes)
  const parts = attribution ? splitWindow(attribution, windowBytes, window.relfilenodes, otherNames) : null
  const walBytes = parts?.walBytes ?? windowBytes
  const { rows, logicalBytes } = window.logical
  return {
    kind: 'insert-cost',
    rows,
    logicalBytes,
    logicalBytesSource: window.logical.source,
    windowBytes,
    walBytes,
    // Without attribution the window cannot be told apart: how much was others' is unknown, not 0.
    noiseBytes: parts ? windowBytes - walBytes : null,
    timing: {
      batchMs: window.batchMs,
      msPerRow: rows > 0 ? window.batchMs / rows : null,
      callMs: null,
      statements:
        batch.kind === 'count' || batch.kind === 'rows' ? statementsFor(options.method, rows, options.batchSize) : null,
      parts: null,
    },
    walRecords: parts?.records ?? statWal?.records ?? null,
    fpiCount: parts?.fpiCount ?? statWal?.fpi ?? null,
    amplification: logicalBytes > 0 ? walBytes / logicalBytes : null,
    bytesPerRow: rows > 0 ? walBytes / rows : null,
    breakdown: parts?.breakdown ?? null,
    writes: window.writes,
    updatesToNewPage: attribution?.updatesToNewPage
      ? updatesToNewPage(attribution.updatesToNewPage, window.relfilenodes)
      : null,
    heap: parts?.heap ?? null,
    indexes: parts?.indexes ?? [],
    otherRelations: parts?.otherRelations ?? [],
    attribution: reading.method,
    walSource:
      reading.method === 'wal'
        ? (server.capabilities.walBytes ?? 'files')
        : reading.method === 'walinspect'
          ? 'walinspect'
          : 'totals',
    attributionNote:
      reading.method === 'lsn'
        ? `Totals only: ${reading.note}. walBytes is the whole window and includes any other activity on the cluster${statWal ? `; pg_stat_wal counted ${statWal.bytes} record bytes over the measuring transaction` : ''}.`
        : reading.note,
    statWal,
    window: { startLsn: window.start.lsn, endLsn: window.end.lsn },
    scenario: {
      table: relation.quoted,
      batch: batch.kind,
      method: options.method,
      batchSize: options.method === 'multirow' ? options.batchSize : 1,
      checkpoint: window.checkpointed,
      droppedIndexes: window.droppedIndexes,
      settings,
      synthetic: batch.synthetic,
    },
    server: { ...server.facts, backend: session.backend },
    checkpointDuringWindow,
    notes: [...notes, ...(await pendingListNotes(session, relation.schema, parts?.indexes ?? [], rows))],
    configNotes: configNotes(
      { ...server.facts, ...(settings.wal_compression ? { walCompression: settings.wal_compression } : {}) },
      Number(size?.bytes ?? 0),
    ),
    skipped,
    durationMs: Math.round(performance.now() - began),
  }
}

/** Why an unlogged or temporary table measures next to nothing: it is not a measurement failure. */
function persistenceNotes(relation: Pick<TableRelation, 'quoted' | 'unlogged' | 'temporary'>): string[] {
  if (!relation.unlogged && !relation.temporary) return []
  const what = relation.unlogged ? 'an UNLOGGED table' : 'a temporary table'
  const logged = relation.unlogged
    ? ` To measure what it would cost logged, measure a logged copy (ALTER TABLE ... SET LOGGED on a copy).`
    : ' To measure what a permanent table would cost, create it without TEMPORARY.'
  return [
    `${relation.quoted} is ${what}: its rows and indexes write no WAL (only the transaction's own records do), so the bytes a row here are close to 0 and say nothing about a logged table.${logged}`,
  ]
}

/** What other transactions committed to the table, its TOAST and its indexes during the window. */
interface EscapedWrites {
  records: number
  bytes: number
}

function escapedWrites(
  attribution: WindowAttribution | null,
  relfilenodes: Map<string, string | null>,
): EscapedWrites | null {
  let records = 0
  let bytes = 0
  for (const [relation, wal] of attribution?.committedOthers ?? []) {
    if (!relfilenodes.has(relation)) continue
    records += wal.records
    bytes += wal.bytes
  }
  return records > 0 ? { records, bytes } : null
}

/** The committed writes in the user's words: where they went, how much, and that they stay. */
function escapedWords(escaped: EscapedWrites, table: string): string {
  return `other transactions committed ${counted(escaped.records, 'WAL record')} (${counted(escaped.bytes, 'byte')}) to ${table} and its indexes: the code wrote through a connection of its own, outside walcost's transaction (or another session wrote to the table at the same time). Those writes were committed and NOT rolled back: they are in the table now.`
}

/** A batch after which walcost's transaction had written no row of the table. */
function wroteNothing(batch: PreparedBatch, table: string): WalcostError {
  if (batch.kind !== 'run') {
    return new WalcostError(
      'BATCH_WROTE_NOTHING',
      `the ${batch.kind} batch wrote no row of ${table}: nothing was measured. Check that its statements write into ${table} (not another table) and match rows (an UPDATE or DELETE whose WHERE matches nothing, an INSERT ... ON CONFLICT DO NOTHING whose keys all exist write nothing).`,
      { field: batch.kind },
    )
  }
  return new WalcostError(
    'BATCH_WROTE_NOTHING',
    `the run callback finished without writing a row of ${table} in walcost's transaction: nothing was measured. The usual causes: a query not awaited and not yet sent when run settled (code that waited on a timer or other work first, whose queries were refused once run had settled: write run: (db) => insertOrders(db, rows), or await it); a query builder neither awaited nor returned (Drizzle's db.insert(...).values(...) and Kysely's builders send nothing until awaited: return it from run, or await it); writes through a connection the code opened itself (new pg.Client(), the app's own pool), which are outside walcost's transaction: use the connection run is handed. Or the code wrote into another table than ${table}.`,
    { field: 'run' },
  )
}

/**
 * Other transactions that changed the table or its indexes inside the window (autovacuum cleaning
 * the dead tuples of rolled-back runs, another session): a page they changed first after a
 * checkpoint took its image in their record, not in the batch's, so fewer images are reported than
 * the batch alone would log.
 */
function interferenceNotes(attribution: WindowAttribution | null, relfilenodes: Map<string, string | null>): string[] {
  const touched = [...(attribution?.othersByRelation ?? [])].filter(([relation]) => relfilenodes.has(relation))
  if (touched.length === 0) return []
  const records = touched.reduce((sum, [, count]) => sum + count, 0)
  const names = touched.map(([relation]) => relfilenodes.get(relation) ?? 'the table')
  return [
    `${counted(records, 'record')} that are not the batch's (autovacuum, another session, or hint bits set by a read before the batch's first write) changed ${[...new Set(names)].join(', ')} during the measurement: pages they changed first after the last checkpoint logged their images in those records, not the batch's, so fpiCount may be lower than the batch alone would log. Measure again when the table is quiet (VACUUM it first, so that autovacuum has nothing to do).`,
  ]
}

/**
 * Reads the window back the best way this session allows: the WAL itself (exact, and fast), else
 * pg_walinspect, else nothing but the LSN totals; the note says what would give more.
 */
async function readBack(
  session: Session,
  server: Server,
  window: Window,
  enclosing: Enclosing,
): Promise<
  | { method: 'wal' | 'walinspect'; attribution: WindowAttribution; note: string | null }
  | { method: 'lsn'; attribution: null; note: string }
> {
  const { capabilities } = server
  if (capabilities.readWal) {
    return {
      method: 'wal',
      attribution:
        window.attribution ?? (await readWindow(session, walLayout(server), window.start, window.end, window.xids)),
      note: null,
    }
  }
  const walinspect = capabilities.walinspect
  if ('schema' in walinspect) {
    const attribution = await attributeWithWalinspect(
      session,
      walinspect,
      window.start,
      window.end,
      window.xids,
      enclosing === 'savepoint',
    )
    return {
      method: 'walinspect',
      attribution,
      note: `Read through pg_walinspect, which names each image under its record's first relation: to read the WAL itself, exactly and faster, ${readWalAdvice(capabilities)}.`,
    }
  }
  return {
    method: 'lsn',
    attribution: null,
    note: `${walinspect.unavailable}; or, to read the WAL without pg_walinspect, ${readWalAdvice(capabilities)}`,
  }
}

function indexesToDrop(table: Table, dropIndexes: ParsedMeasureOptions['dropIndexes']): Index[] {
  if (dropIndexes === false) return []
  if (dropIndexes === true) return table.indexes
  return dropIndexes.map((name) => {
    const index = table.indexes.find((candidate) => candidate.name === name)
    if (!index) {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `dropIndexes: ${table.quoted} has no index ${quoteIdent(name)} (its indexes: ${table.indexes.map((i) => i.name).join(', ') || 'none'}).`,
        { field: 'dropIndexes' },
      )
    }
    return index
  })
}

/**
 * A setting the measuring transaction sets for itself (SET LOCAL): it is gone once that transaction,
 * or the savepoint it runs in, has ended. transaction_timestamp() could not tell: PGlite's clock
 * counts milliseconds, and a batch's COMMIT and the next statement can fall in the same one.
 */
const OPEN_SETTING = 'walcost.measuring'

/** Whether the measuring transaction is still open; an aborted one (a failed statement) is. */
async function stillOpen(session: Session): Promise<boolean> {
  try {
    const [row] = await session.query<{ open: boolean }>(
      `select current_setting('${OPEN_SETTING}', true) is not distinct from 'on' as open`,
    )
    return row?.open === true
  } catch {
    return true
  }
}

function endedTransaction(batch: PreparedBatch, cause?: unknown): WalcostError {
  const advice =
    batch.kind === 'run'
      ? "the run callback ended walcost's transaction (a COMMIT or ROLLBACK walcost could not turn into a savepoint: inside a multi-statement string, a DO block or a procedure): what it wrote before that may have been committed, and its writes after it were refused (read-only). Send transaction control as statements of their own (BEGIN ... COMMIT, or its library's transaction()), which walcost runs as savepoints."
      : "the sql batch ended walcost's transaction (COMMIT, ROLLBACK or a transaction-control statement): what it inserted before that may have been committed, and its writes after it were refused (read-only). Remove transaction control from sql; walcost wraps the batch in its own transaction."
  return new WalcostError('BATCH_ENDED_TRANSACTION', advice, { field: batch.kind === 'run' ? 'run' : 'sql', cause })
}

async function measureWindow(
  session: Session,
  server: Server,
  table: TableRelation,
  batch: PreparedBatch,
  options: ParsedMeasureOptions,
  toDrop: Index[],
  run: number,
): Promise<Window> {
  // Xids held now belong to an enclosing transaction (savepoint mode): their records are not ours.
  const [{ xids: enclosingXids, pid } = { xids: [], pid: 0 }] = await session.query<{ xids: string[]; pid: number }>(
    `select set_config('${OPEN_SETTING}', 'on', true), ${HELD_XIDS_SQL} as xids, pg_backend_pid() as pid`,
  )
  for (const index of toDrop) {
    const statement =
      index.constraint !== null
        ? `alter table ${table.quoted} drop constraint ${quoteIdent(index.constraint)}`
        : `drop index ${quoteIdent(table.schema)}.${quoteIdent(index.name)}`
    try {
      await session.exec(statement)
    } catch (error) {
      throw fromServerError(error, `dropping index ${index.name}`)
    }
  }
  const checkpointed = options.checkpoint && server.capabilities.checkpoint
  if (checkpointed) await session.exec('checkpoint')
  const [before] = await session.query<{ pages: string; node: string }>(
    `select (pg_relation_size($1::oid) / current_setting('block_size')::int8)::text as pages, pg_relation_filenode($1::oid)::text as node`,
    [table.oid],
  )
  // Its insert records give the rows' bytes, unless a virtual column's are computed only when read.
  const heap = table.attributes.some((attribute) => attribute.virtual)
    ? null
    : { relNumber: Number(before?.node), attributes: table.attributes }
  const writesBefore = await readWrites(session, table)
  throwIfAborted(options.signal)

  const companion = (await session.companion) ?? null
  const start = await insertPosition(session)
  const follower = companion ? followWal(companion, server, start, { pid, session }, heap) : null
  let tallying: Promise<WindowTally> | null = null
  try {
    const batchStart = performance.now()
    let endedXids: string[]
    try {
      endedXids = await runBatch(session, table, batch, options, run)
    } catch (error) {
      // A batch that ended the transaction and then failed (its next write, read-only) says the first.
      if (!(await stillOpen(session))) throw endedTransaction(batch, error)
      throw fromServerError(
        error,
        'running the batch (nothing was kept: the transaction was rolled back)',
        'BATCH_FAILED',
      )
    }
    const batchMs = performance.now() - batchStart
    const [state] = await session.query<{ bytes: string; written: string; xids: string[]; open: boolean }>(
      `select ${WINDOW_END_MARK} (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes,
              (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as written, ${HELD_XIDS_SQL} as xids,
              current_setting('${OPEN_SETTING}', true) is not distinct from 'on' as open`,
    )
    if (!state) throw new WalcostError('QUERY_FAILED', 'pg_current_wal_insert_lsn() returned nothing.')
    // The position as text from the same call as the bytes: a second call may be past it.
    const end = { lsn: formatLsn(Number(state.bytes)), bytes: Number(state.bytes), written: Number(state.written) }
    // The companion finishes reading the window. This session helps, between its own queries: it
    // asks for the flush of the rest (17+), or reads what was already written while the companion
    // asks for it.
    tallying = follower?.finish(end, options.flushTimeoutMs) ?? null
    tallying?.catch(() => undefined)
    // The follower's flush (17+) runs on this session between these statements: where it failed
    // (cancelled, say), this transaction is aborted, and the session reports that failure first.
    const [control] = server.capabilities.readControl
      ? await session.query<{ moved: boolean }>('select redo_lsn > $1::pg_lsn as moved from pg_control_checkpoint()', [
          start.lsn,
        ])
      : []
    if (!state.open) throw endedTransaction(batch)
    const writesAfter = await readWrites(session, table)
    const writes: Writes = {
      inserted: writesAfter.inserted - writesBefore.inserted,
      updated: writesAfter.updated - writesBefore.updated,
      hotUpdated: writesAfter.hotUpdated - writesBefore.hotUpdated,
      deleted: writesAfter.deleted - writesBefore.deleted,
    }
    const relfilenodes = await readRelfilenodes(session, table)
    const xids = [...new Set([...state.xids, ...endedXids])].filter((xid) => !enclosingXids.includes(xid))
    // A companion session that was lost (terminated, say), or that could not read a segment in
    // time, leaves the reading to this one, afterwards. Any other failure (a cancelled statement,
    // on either session) ends the measurement: the writer's first, since its transaction is ours.
    let tally = tallying
      ? await tallying.catch(async (error: unknown) => {
          const writerFailure = await follower?.writerFailure()
          if (writerFailure) throw writerFailure
          if (isConnectionError(error) || (error instanceof WalcostError && error.code === 'WAL_UNREADABLE'))
            return null
          throw error
        })
      : null
    // PGlite reads its WAL in place, as fast inside the transaction as after it: read before the
    // rollback, its records spare the scan of the new rows. 17+ flushes there on request.
    if (!tally && session.readDataFile && server.capabilities.readWal && flushesInTransaction(server)) {
      // The flush writes out the last WAL buffers, and may start a segment file. PGlite's files live
      // in memory and grow by copying as they are written: filling 16 MB with zeros first cost
      // 15-97 ms of a flush that starts one. The rollback restores the setting.
      if (server.capabilities.skipWalZeroFill) await session.query(`select set_config('wal_init_zero', 'off', true)`)
      await waitForFlush(session, server, end, options.flushTimeoutMs, true)
      tally = await readTally(session, walLayout(server), start, end, heap)
    }
    const attribution = tally?.attribute(xids) ?? null
    const logical =
      insertedFromWal(attribution, writes) ??
      (await readLogicalBytes(session, table, xids, {
        pages: Number(before?.pages ?? 0),
        inserted: writesBefore.inserted,
      }))
    return {
      start,
      end,
      xids,
      redoMoved: control?.moved === true,
      relfilenodes,
      logical,
      writes,
      droppedIndexes: toDrop.map((index) => index.name),
      checkpointed,
      attribution,
      batchMs,
    }
  } catch (error) {
    // The companion session is left idle and usable before the error goes on.
    await (tallying ?? follower?.abandon())?.catch(() => undefined)
    throw error
  }
}

/**
 * The rows and their bytes from the batch's insert records, where they are all of what it did to
 * the table: every row the counters saw inserted decoded, none updated or deleted since (a scan
 * reads rows as they are at the end). Otherwise null, and the rows are scanned.
 */
function insertedFromWal(attribution: WindowAttribution | null, writes: Writes): LogicalBytes | null {
  const inserted = attribution?.insertedRows
  if (!inserted || inserted.unread > 0 || inserted.rows !== writes.inserted) return null
  if (writes.updated > 0 || writes.deleted > 0) return null
  return { rows: inserted.rows, logicalBytes: inserted.bytes, source: 'wal' }
}

/** The table's (heap's) updates that moved to a new page; its TOAST's do not count. */
function updatesToNewPage(byRelation: Map<string, number>, relfilenodes: Map<string, string | null>): number {
  let moved = 0
  for (const [relation, records] of byRelation) if (relfilenodes.get(relation) === null) moved += records
  return moved
}

/** The transaction's own counters of the table's rows, as pg_stat_xact_user_tables has them. */
async function readWrites(session: Session, table: Pick<Table, 'oid'>): Promise<Writes> {
  const [row] = await session.query<Record<keyof Writes, string>>(
    `select pg_stat_get_xact_tuples_inserted($1::oid)::text as inserted,
            pg_stat_get_xact_tuples_updated($1::oid)::text as updated,
            pg_stat_get_xact_tuples_hot_updated($1::oid)::text as "hotUpdated",
            pg_stat_get_xact_tuples_deleted($1::oid)::text as deleted`,
    [table.oid],
  )
  return {
    inserted: Number(row?.inserted ?? 0),
    updated: Number(row?.updated ?? 0),
    hotUpdated: Number(row?.hotUpdated ?? 0),
    deleted: Number(row?.deleted ?? 0),
  }
}

/**
 * relfilenode -> the index's name, or null for the table and its TOAST, as of the end of the batch
 * (a rewrite in the batch changes them; dropped indexes are gone).
 */
async function readRelfilenodes(session: Session, table: Pick<Table, 'oid'>): Promise<Map<string, string | null>> {
  const rows = await session.query<{ node: string | null; index: string | null }>(
    `select pg_relation_filenode(c.oid)::text as node, null::name as index from pg_class c
      where c.oid = $1::oid or c.oid = (select reltoastrelid from pg_class where oid = $1::oid)
         or c.oid = (select i.indexrelid from pg_index i join pg_class t on t.reltoastrelid = i.indrelid where t.oid = $1::oid)
     union all
     select pg_relation_filenode(i.indexrelid)::text, c.relname from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = $1::oid`,
    [table.oid],
  )
  return new Map(rows.filter((row) => row.node !== null).map((row) => [row.node as string, row.index]))
}

interface WindowParts {
  walBytes: number
  records: number
  fpiCount: number
  breakdown: Breakdown
  heap: RelationCost
  indexes: IndexCost[]
  otherRelations: OtherRelationCost[]
}

/** Who another relation our transaction wrote is, by relfilenode. */
type RelationNames = Map<string, Pick<OtherRelationCost, 'name' | 'kind'>>

/**
 * Our share of the window: our records with their alignment, plus WAL page headers in proportion to
 * our share of the records. Heap, index and other-relation parts exclude image bytes; every image
 * byte is fpi; records that name no relation, alignment and page headers are other.
 */
function splitWindow(
  attribution: WindowAttribution,
  windowBytes: number,
  relfilenodes: Map<string, string | null>,
  otherNames: RelationNames,
): WindowParts {
  const pageHeaders = Math.max(0, windowBytes - attribution.alignedBytes)
  const walBytes =
    attribution.oursAlignedBytes === 0
      ? 0
      : attribution.oursAlignedBytes +
        Math.round((pageHeaders * attribution.oursAlignedBytes) / attribution.alignedBytes)
  const empty = (): RelationCost => ({ records: 0, walBytes: 0, fpiCount: 0, fpiBytes: 0, recordTypes: [] })
  const heap = empty()
  const indexNames = [...relfilenodes.values()].filter((name): name is string => name !== null).sort()
  const byIndex = new Map(indexNames.map((name) => [name, empty()]))
  const byOther = new Map<string, RelationCost>()
  let records = 0
  let fpiCount = 0
  let fpiBytes = 0
  for (const [node, types] of attribution.ours) {
    const index = relfilenodes.get(node)
    let target = index === null ? heap : index === undefined ? undefined : byIndex.get(index)
    if (target === undefined && node !== '') {
      target = byOther.get(node) ?? empty()
      byOther.set(node, target)
    }
    for (const wal of types) {
      records += wal.records
      fpiCount += wal.fpiCount
      fpiBytes += wal.fpiBytes
      if (!target) continue
      target.records += wal.records
      target.walBytes += wal.bytes
      target.fpiCount += wal.fpiCount
      target.fpiBytes += wal.fpiBytes
      addRecordType(target, {
        type: wal.type,
        records: wal.records,
        walBytes: wal.bytes,
        fpiCount: wal.fpiCount,
        fpiBytes: wal.fpiBytes,
      })
    }
  }
  const mostBytesFirst = (a: { walBytes: number }, b: { walBytes: number }) => b.walBytes - a.walBytes
  heap.recordTypes.sort(mostBytesFirst)
  const indexes = [...byIndex].map(([name, cost]) => ({
    name,
    ...cost,
    recordTypes: cost.recordTypes.sort(mostBytesFirst),
  }))
  const otherRelations = [...byOther]
    .map(
      ([node, cost]): OtherRelationCost => ({
        ...(otherNames.get(node) ?? { name: `relfilenode ${node}`, kind: 'rolled back' }),
        ...cost,
        recordTypes: cost.recordTypes.sort(mostBytesFirst),
      }),
    )
    .sort(mostBytesFirst)
  const recordBytes = (relations: RelationCost[]) =>
    relations.reduce((sum, relation) => sum + relation.walBytes - relation.fpiBytes, 0)
  const heapBytes = recordBytes([heap])
  const indexBytes = recordBytes(indexes)
  const otherRelationBytes = recordBytes(otherRelations)
  return {
    walBytes,
    records,
    fpiCount,
    breakdown: {
      heapBytes,
      indexBytes,
      otherRelationBytes,
      fpiBytes,
      otherBytes: walBytes - heapBytes - indexBytes - otherRelationBytes - fpiBytes,
    },
    heap,
    indexes,
    otherRelations,
  }
}

const RELATION_KINDS: Record<string, OtherRelationCost['kind']> = {
  r: 'table',
  p: 'table',
  i: 'index',
  I: 'index',
  t: 'toast',
  S: 'sequence',
  m: 'materialized view',
}

/**
 * Names the relations our transaction wrote beyond the table, its TOAST and its indexes. Read after
 * the rollback: a relation the batch itself created is gone by then, and says so.
 */
async function nameOtherRelations(
  session: Session,
  attribution: WindowAttribution | null,
  relfilenodes: Map<string, string | null>,
): Promise<RelationNames> {
  const nodes = [...(attribution?.ours.keys() ?? [])].filter((node) => node !== '' && !relfilenodes.has(node))
  if (nodes.length === 0) return new Map()
  const rows = await session.query<{ node: string; name: string; kind: string }>(
    `select pg_relation_filenode(c.oid)::text as node, c.oid::regclass::text as name, c.relkind::text as kind
       from pg_class c where pg_relation_filenode(c.oid)::text = any ($1::text[])`,
    [nodes],
  )
  return new Map(rows.map((row) => [row.node, { name: row.name, kind: RELATION_KINDS[row.kind] ?? 'table' }]))
}

/** Adds to the relation's entry for that record type (TOAST and the table share the heap's list). */
function addRecordType(relation: RelationCost, wal: RecordTypeCost) {
  const existing = relation.recordTypes.find((entry) => entry.type === wal.type)
  if (existing) {
    existing.records += wal.records
    existing.walBytes += wal.walBytes
    existing.fpiCount += wal.fpiCount
    existing.fpiBytes += wal.fpiBytes
  } else {
    relation.recordTypes.push({ ...wal })
  }
}
