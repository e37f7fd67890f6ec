import { integer, percent, roundOne } from '../core/format.js'
import { BTREE_DEFAULT_FILLFACTOR, HASH_DEFAULT_FILLFACTOR } from '../core/units.js'
import type { Session } from '../driver/types.js'
import { resolveTable, type Table } from '../measure/catalog.js'
import { readServer } from '../wal/server.js'
import { keyOrderFromStats, leafCapacity } from './btree.js'
import { type ColumnLayout, indexTupleSize } from './layout.js'
import { brinAssumption, estimatedAsBtree, type IndexModel, MODELLED_METHODS, type TableModel } from './table-model.js'
import { sampleTable } from './table-sample.js'
import { typeLayout } from './types.js'

// A table on a database, as its catalog, its statistics and a sample of it describe it.

/** The model of a table on a database: nothing is written. */
export async function modelFromCatalog(session: Session, name: string): Promise<TableModel> {
  const server = await readServer(session)
  const table = await resolveTable(session, name)
  const assumptions: string[] = []
  const tableRows = table.estimatedRows
  const columns = table.columns.map((column): ColumnLayout => {
    const fallback = typeLayout(column.typeName)?.width ?? 17
    if (column.length < 0 && column.avgWidth === null)
      assumptions.push(`${column.name}: no statistics, assumed ${fallback} bytes a value; run ANALYZE ${table.quoted}`)
    return {
      name: column.name,
      length: column.length,
      align: column.align,
      avgWidth: column.avgWidth ?? (column.length > 0 ? column.length : fallback),
      nullFraction: column.nullFraction,
    }
  })
  const byAttnum = new Map(
    table.columns.map((column, i) => [column.attnum, { layout: columns[i] as ColumnLayout, stats: column }]),
  )
  const sample = await sampleTable(session, table)
  const indexes = table.indexes.map((index): IndexModel => {
    const own: string[] = []
    const shape = sample.indexes.get(index.oid)
    const expressionWidths = [...(shape?.expressionWidths ?? [])]
    const layouts = index.columns.map((attnum) => {
      const member = byAttnum.get(attnum)
      if (member) return member.layout
      const width = expressionWidths.shift()
      if (width === undefined || width === null) own.push(`${index.name}: an expression key, assumed 8 bytes`)
      else own.push(`${index.name}: an expression key of ${roundOne(width)} bytes a value on a sample of the table`)
      return { name: '?', length: -1, align: 'i' as const, avgWidth: width ?? 8, nullFraction: 0 }
    })
    if (index.method === 'brin') own.push(brinAssumption(index.name))
    else if (!MODELLED_METHODS.has(index.method))
      own.push(`${index.name}: ${index.method} index estimated as a B-tree of the same keys`)
    // A GiST leaf stores its operator class's key type where it has one (point: a 32-byte box).
    const keyLengths = shape?.gistKeyLengths
    const keys = keyLengths
      ? layouts.map((layout, k) => {
          const length = keyLengths[k]
          return length && length > 0 ? { ...layout, length, avgWidth: length, nullFraction: 0 } : layout
        })
      : layouts
    if (shape?.predicateShare !== undefined)
      own.push(
        `${index.name}: partial, taking ${percent(shape.predicateShare)} of rows (its predicate on a sample of the table)`,
      )
    const keyStats = index.columns.slice(0, index.keyCount).map((attnum) => byAttnum.get(attnum)?.stats)
    const fillfactor =
      index.fillfactor ?? (index.method === 'hash' ? HASH_DEFAULT_FILLFACTOR : BTREE_DEFAULT_FILLFACTOR)
    const keyOrder = keyOrderFromStats(
      keyStats,
      index.unique,
      tableRows,
      leafCapacity(indexTupleSize(layouts), server.facts.blockSize),
    )
    const [leading] = keyStats
    if (keyOrder === 'random' && estimatedAsBtree(index.method) && leading && leading.correlation === null)
      own.push(`${index.name}: no statistics on the order of its keys; run ANALYZE ${table.quoted}`)
    assumptions.push(...own)
    return {
      name: index.name,
      method: index.method,
      columns: keys,
      keyOrder,
      fillfactor,
      share: index.method === 'brin' ? 0 : (shape?.predicateShare ?? 1),
      ...(shape?.gin && { gin: shape.gin }),
      ...(shape?.rangeArrival && { gist: { arrival: shape.rangeArrival, tableRows } }),
      assumptions: own,
    }
  })
  assumptions.push(...(await otherRelationWrites(session, table)))
  const { toast } = sample
  if (toast.valuesPerRow > 0) {
    assumptions.push(
      `TOAST: ${roundOne(toast.valuesPerRow)} values a row stored out of line, ${integer(toast.bytesPerRow)} bytes a row, on a sample of the table`,
    )
  }
  return {
    table: table.quoted,
    columns,
    indexes,
    fillfactor: table.fillfactor,
    walLevel: server.facts.walLevel,
    blockSize: server.facts.blockSize,
    sequences: table.columns.filter((column) => column.sequenced).length,
    unlogged: table.unlogged,
    temporary: table.temporary,
    volatileDefault: table.columns.some((column) => column.volatileDefault),
    toast,
    assumptions,
  }
}

/** What the prediction leaves out: writes the table's triggers and foreign keys cause in other relations. */
async function otherRelationWrites(session: Session, table: Table): Promise<string[]> {
  const triggers = await session.query<{ name: string }>(
    `select tgname::text as name from pg_trigger where tgrelid = $1::oid and not tgisinternal order by tgname`,
    [table.oid],
  )
  return [
    ...triggers.map(
      ({ name }) =>
        `trigger ${name}: what it writes to other relations is not predicted (measureInsertCost names each relation it writes)`,
    ),
    ...table.foreignKeys.map(
      (key) =>
        `foreign key ${key.name}: each parent row it references is locked once a transaction (Heap/LOCK on ${key.parent}), not predicted`,
    ),
  ]
}
