import type { ObservedRelation } from './observation.js'

/** The labels of one relation's series (or of a database's `other`). */
export interface RelationLabels {
  database: string
  schema: string
  relation: string
  kind: string
  table: string
}

/** What one interval adds to one series. */
export interface SeriesIncrement {
  labels: RelationLabels
  bytes: number
  records: number
  fpiCount: number
  fpiBytes: number
}

/** The label a database's shared catalogs (database 0) carry: the tablespace they live in. */
export const SHARED_DATABASE = 'pg_global'
/** The relation label of what a database's relations without a series of their own add up to. */
export const OTHER_RELATION = 'other'

/**
 * Relations as counter series, at most `top` a database: a relation is given a series of its own
 * the first time it writes while its database has room, the ones with more bytes first when more
 * arrive at once than there is room for; the others' bytes are added to their database's
 * `relation="other"`. A series is never taken back: a counter that stopped counting a relation
 * part-way would make that relation's bytes move from one series to another, and the one it left
 * would read, to Prometheus, as a reset. So the set of named relations is decided once, as they
 * first write, and memory is that of `top` relations a database however long it runs.
 */
export class RelationSeries {
  private readonly databases = new Map<number, { named: Map<string, RelationLabels>; other: RelationLabels | null }>()

  constructor(private readonly top: number) {}

  /** An interval's relations as increments of their series, one an entry (a relation, or its database's other). */
  increments(relations: readonly ObservedRelation[]): SeriesIncrement[] {
    const bySeries = new Map<RelationLabels, SeriesIncrement>()
    const mostBytesFirst = [...relations].sort((a, b) => b.bytes - a.bytes)
    for (const relation of mostBytesFirst) {
      const labels = this.labelsOf(relation)
      const sum = bySeries.get(labels) ?? { labels, bytes: 0, records: 0, fpiCount: 0, fpiBytes: 0 }
      sum.bytes += relation.bytes
      sum.records += relation.records
      sum.fpiCount += relation.fpiCount
      sum.fpiBytes += relation.fpiBytes
      bySeries.set(labels, sum)
    }
    return [...bySeries.values()]
  }

  private labelsOf(relation: ObservedRelation): RelationLabels {
    let series = this.databases.get(relation.databaseOid)
    if (!series) {
      series = { named: new Map(), other: null }
      this.databases.set(relation.databaseOid, series)
    }
    const { named } = series
    const database = relation.database ?? (relation.databaseOid === 0 ? SHARED_DATABASE : String(relation.databaseOid))
    // A relation keeps its series by name across rewrites and re-creation; one no catalog named, by its file.
    const key =
      relation.name === null
        ? `file ${relation.files[0]?.relfilenode ?? 0}`
        : `${relation.kind}:${relation.schema}.${relation.name}`
    const known = named.get(key)
    if (known) return known
    if (named.size >= this.top) {
      series.other ??= { database, schema: '', relation: OTHER_RELATION, kind: '', table: '' }
      return series.other
    }
    const labels: RelationLabels =
      relation.name === null
        ? { database, schema: '', relation: String(relation.files[0]?.relfilenode ?? 0), kind: 'unnamed', table: '' }
        : {
            database,
            schema: relation.schema ?? '',
            relation: relation.name,
            kind: relation.kind ?? 'unnamed',
            table: relation.table ?? '',
          }
    named.set(key, labels)
    return labels
  }
}
