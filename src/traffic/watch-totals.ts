import type { RecordTypeWal } from '../wal/attribution.js'
import type { FpiReasons, UnattributedWal } from '../wal/observe-tally.js'
import type { StatementWal } from '../wal/statement-wal.js'
import type { ObservedRelation, WalObservation } from './observation.js'

/** A named relation's totals keep its most recent files only: a table truncated every second would otherwise grow without end. */
const KEPT_FILES = 8

/**
 * The sum of a watch's intervals, kept in memory that follows the number of relations, not of
 * intervals: each interval's observation is added and dropped. Relations no catalog named
 * (created and dropped inside an interval, another database's) are summed per database, since
 * each such file would be an entry of its own.
 */
export class WatchTotals {
  private first: WalObservation<'server'> | null = null
  private last: WalObservation<'server'> | null = null
  private intervals = 0
  private bytes = 0
  private records = 0
  private fpiCount = 0
  private durationMs = 0
  private readonly statWal = { records: 0, fpi: 0, bytes: 0 }
  private readonly relations = new Map<string, ObservedRelation>()
  private readonly unattributed = new Map<string, UnattributedWal>()
  private readonly reasons: FpiReasons = {
    afterCheckpoint: { count: 0, bytes: 0 },
    hintBits: { count: 0, bytes: 0 },
    other: { count: 0, bytes: 0 },
  }
  private readonly transactions = { committed: 0, aborted: 0, abortedBytes: 0 }
  /** False once an interval could not be split (no WAL access): the totals are then totals only. */
  private split = true
  /** pg_stat_statements' WAL by statement, summed, while every unsplit interval had it; null once one did not. */
  private statements: { byKey: Map<string, StatementWal>; evicted: number } | null = { byKey: new Map(), evicted: 0 }

  add(observation: WalObservation<'server'>): void {
    this.first ??= observation
    this.last = observation
    this.intervals += 1
    const { window } = observation
    this.bytes += window.bytes
    this.durationMs += window.durationMs
    this.statWal.records += window.statWal.records
    this.statWal.fpi += window.statWal.fpi
    this.statWal.bytes += window.statWal.bytes
    if (!observation.relations || !observation.unattributed || !observation.fpiReasons || !observation.transactions) {
      this.split = false
      this.addStatements(observation.statements)
      return
    }
    this.records += window.records ?? 0
    this.fpiCount += window.fpiCount ?? 0
    for (const relation of observation.relations) this.addRelation(relation)
    for (const part of observation.unattributed) {
      const total = this.unattributed.get(part.kind)
      if (!total)
        this.unattributed.set(part.kind, { ...part, recordTypes: part.recordTypes.map((type) => ({ ...type })) })
      else {
        total.records += part.records
        total.bytes += part.bytes
        addTypes(total.recordTypes, part.recordTypes)
      }
    }
    for (const reason of ['afterCheckpoint', 'hintBits', 'other'] as const) {
      this.reasons[reason].count += observation.fpiReasons[reason].count
      this.reasons[reason].bytes += observation.fpiReasons[reason].bytes
    }
    this.transactions.committed += observation.transactions.committed
    this.transactions.aborted += observation.transactions.aborted
    this.transactions.abortedBytes += observation.transactions.abortedBytes
  }

  private addStatements(statements: WalObservation['statements']): void {
    if (!this.statements || !statements) {
      this.statements = null
      return
    }
    this.statements.evicted += statements.evicted
    for (const statement of statements.statements) {
      const key = `${statement.queryId}:${statement.role}:${statement.database}:${statement.topLevel}`
      const total = this.statements.byKey.get(key)
      if (!total) this.statements.byKey.set(key, { ...statement })
      else {
        total.calls += statement.calls
        total.walBytes += statement.walBytes
        total.walRecords += statement.walRecords
        total.walFpi += statement.walFpi
      }
    }
  }

  private addRelation(relation: ObservedRelation): void {
    const key =
      relation.name === null
        ? `${relation.databaseOid}:unnamed`
        : `${relation.databaseOid}:${relation.kind}:${relation.schema}.${relation.name}`
    const total = this.relations.get(key)
    if (!total) {
      this.relations.set(key, {
        ...relation,
        files: relation.name === null ? [] : relation.files.slice(-KEPT_FILES).map((file) => ({ ...file })),
        recordTypes: relation.recordTypes.map((type) => ({ ...type })),
      })
      return
    }
    total.records += relation.records
    total.bytes += relation.bytes
    total.fpiCount += relation.fpiCount
    total.fpiBytes += relation.fpiBytes
    addTypes(total.recordTypes, relation.recordTypes)
    if (relation.name === null) return
    for (const file of relation.files) {
      const known = total.files.find(
        (kept) => kept.relfilenode === file.relfilenode && kept.tablespace === file.tablespace,
      )
      if (known) {
        known.created ||= file.created
        known.dropped ||= file.dropped
      } else total.files.push({ ...file })
    }
    if (total.files.length > KEPT_FILES) total.files.splice(0, total.files.length - KEPT_FILES)
  }

  /** The intervals so far, as one observation of the whole window: null before the first. */
  observation(): WalObservation<'server'> | null {
    const { first, last } = this
    if (!first || !last) return null
    const mostBytesFirst = (a: { bytes: number }, b: { bytes: number }) => b.bytes - a.bytes
    const split = this.split
    return {
      kind: 'wal-observation',
      window: {
        startLsn: first.window.startLsn,
        endLsn: last.window.endLsn,
        bytes: this.bytes,
        records: split ? this.records : null,
        fpiCount: split ? this.fpiCount : null,
        durationMs: this.durationMs,
        statWal: { ...this.statWal },
      },
      relations: split
        ? [...this.relations.values()]
            .map((relation) => ({
              ...relation,
              files: relation.files.map((file) => ({ ...file })),
              recordTypes: relation.recordTypes.map((type) => ({ ...type })).sort(mostBytesFirst),
            }))
            .sort(mostBytesFirst)
        : null,
      fpiReasons: split ? structuredClone(this.reasons) : null,
      transactions: split ? { ...this.transactions } : null,
      unattributed: split
        ? [...this.unattributed.values()]
            .map((part) => ({ ...part, recordTypes: part.recordTypes.map((type) => ({ ...type })) }))
            .sort(mostBytesFirst)
        : null,
      statements:
        split || !this.statements
          ? null
          : {
              source: 'pg_stat_statements',
              statements: [...this.statements.byKey.values()]
                .map((statement) => ({ ...statement }))
                .sort((a, b) => b.walBytes - a.walBytes),
              evicted: this.statements.evicted,
            },
      attribution: split ? 'wal' : 'lsn',
      walSource: last.walSource,
      attributionNote: split ? null : (last.attributionNote ?? first.attributionNote),
      notes: [
        `The sum of ${this.intervals} interval${this.intervals === 1 ? '' : 's'}; each interval's notes are in its own observation.${split ? ' Relations no catalog named are summed by database, and a relation lists its last files only.' : ''}`,
      ],
      partial: false,
      server: last.server,
      files: null,
    }
  }
}

function addTypes(into: RecordTypeWal[], types: readonly RecordTypeWal[]): void {
  for (const type of types) {
    const total = into.find((entry) => entry.type === type.type)
    if (!total) into.push({ ...type })
    else {
      total.records += type.records
      total.bytes += type.bytes
      total.fpiCount += type.fpiCount
      total.fpiBytes += type.fpiBytes
    }
  }
}
