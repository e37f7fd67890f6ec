import { fromServerError } from '../core/errors.js'
import { fileKey } from '../decode/xact-record.js'
import type { Session } from '../driver/types.js'
import type { RecordTypeWal } from '../wal/attribution.js'
import type { FileWal } from '../wal/observe-tally.js'
import type { ObservedRelation, RelationKind } from './observation.js'

/** A relation as the catalog had it at one moment, found by one of its files. */
interface CatalogRelation {
  oid: number
  name: string
  schema: string
  kind: RelationKind
  table: string | null
}

/** The relations of the connected database (and the shared catalogs) by file, at one moment. */
export interface RelationCatalog {
  files: Map<string, CatalogRelation>
  /** Every database's name by oid. */
  databases: Map<number, string>
  /** The connected database's oid. */
  database: number
}

const KINDS: Record<string, RelationKind> = { r: 'table', i: 'index', S: 'sequence', t: 'toast', m: 'matview' }

/**
 * Every relation with a file, by the locator its blocks carry in WAL: pg_relation_filenode rather
 * than relfilenode, which is 0 for mapped catalogs; the database's default tablespace where
 * reltablespace says 0; database 0 for shared catalogs. Temporary relations write no WAL, and their
 * file numbers may repeat a permanent one's.
 */
export async function readRelationCatalog(session: Session): Promise<RelationCatalog> {
  try {
    const rows = await session.query<{
      node: string
      tablespace: string
      database: string
      oid: string
      name: string
      schema: string
      kind: string
      table: string | null
    }>(
      `with db as (select oid, dattablespace from pg_database where datname = current_database())
       select pg_relation_filenode(c.oid)::text as node,
              (case when c.reltablespace <> 0 then c.reltablespace else db.dattablespace end)::text as tablespace,
              (case when c.relisshared then 0 else db.oid end)::text as database,
              c.oid::text as oid, c.relname::text as name, n.nspname::text as schema, c.relkind::text as kind,
              owner_schema.nspname || '.' || owner.relname as "table"
         from pg_class c cross join db
         join pg_namespace n on n.oid = c.relnamespace
         left join pg_index i on i.indexrelid = c.oid
         left join pg_class toast_owner on c.relkind = 't' and toast_owner.reltoastrelid = c.oid
         left join pg_class owner on owner.oid = coalesce(i.indrelid, toast_owner.oid)
         left join pg_namespace owner_schema on owner_schema.oid = owner.relnamespace
        where c.relkind in ('r', 'i', 'S', 't', 'm') and c.relpersistence <> 't' and pg_relation_filenode(c.oid) is not null`,
    )
    const databases = await session.query<{ oid: string; name: string; current: boolean }>(
      'select oid::text as oid, datname::text as name, datname = current_database() as current from pg_database',
    )
    const files = new Map<string, CatalogRelation>()
    for (const row of rows) {
      files.set(
        fileKey({ tablespace: Number(row.tablespace), database: Number(row.database), relNumber: Number(row.node) }),
        {
          oid: Number(row.oid),
          name: row.name,
          schema: row.schema,
          kind: KINDS[row.kind] ?? 'table',
          table: row.table,
        },
      )
    }
    return {
      files,
      databases: new Map(databases.map((row) => [Number(row.oid), row.name])),
      database: Number(databases.find((row) => row.current)?.oid ?? 0),
    }
  } catch (error) {
    throw fromServerError(error, 'reading the catalog that names relation files')
  }
}

/**
 * The files that took WAL as relations: each named by the catalog read at the window's end if the
 * window made it, else by the one at its start (a file dropped inside the window is only there),
 * and a relation's files (before and after a rewrite) added up. A file neither names stays, by its
 * database and relfilenode.
 */
export function nameFiles(files: readonly FileWal[], start: RelationCatalog, end: RelationCatalog): ObservedRelation[] {
  const relations = new Map<string, ObservedRelation>()
  for (const file of files) {
    const key = fileKey(file)
    const [first, second] = file.created ? [end, start] : [start, end]
    const named = first.files.get(key) ?? second.files.get(key) ?? null
    const relationKey = named ? `${file.database}:${named.oid}` : `${file.database}:${key}`
    let relation = relations.get(relationKey)
    if (!relation) {
      relation = {
        name: named?.name ?? null,
        schema: named?.schema ?? null,
        kind: named?.kind ?? null,
        table: named?.table ?? null,
        database: end.databases.get(file.database) ?? start.databases.get(file.database) ?? null,
        databaseOid: file.database,
        files: [],
        records: 0,
        bytes: 0,
        fpiCount: 0,
        fpiBytes: 0,
        recordTypes: [],
      }
      relations.set(relationKey, relation)
    }
    relation.files.push({
      tablespace: file.tablespace,
      relfilenode: file.relNumber,
      created: file.created,
      dropped: file.dropped,
    })
    add(relation, file)
    for (const type of file.recordTypes) {
      const existing = relation.recordTypes.find((entry) => entry.type === type.type)
      if (existing) add(existing, type)
      else relation.recordTypes.push({ ...type })
    }
  }
  const mostBytesFirst = (a: { bytes: number }, b: { bytes: number }) => b.bytes - a.bytes
  return [...relations.values()]
    .map((relation) => ({ ...relation, recordTypes: relation.recordTypes.sort(mostBytesFirst) }))
    .sort(mostBytesFirst)
}

function add(into: Omit<RecordTypeWal, 'type'>, wal: Omit<RecordTypeWal, 'type'>): void {
  into.records += wal.records
  into.bytes += wal.bytes
  into.fpiCount += wal.fpiCount
  into.fpiBytes += wal.fpiBytes
}
