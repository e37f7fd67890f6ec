import { expect } from 'vitest'
import type { InsertCost } from '../../src/index.js'

/** Heap insert records (INSERT, INSERT+INIT, MULTI_INSERT...), apart from pruning and other heap maintenance. */
export function heapInserts(cost: InsertCost) {
  const inserts = cost.heap!.recordTypes.filter((entry) => /^Heap2?\/(MULTI_)?INSERT/.test(entry.type))
  return {
    records: inserts.reduce((sum, entry) => sum + entry.records, 0),
    bytes: inserts.reduce((sum, entry) => sum + entry.walBytes - entry.fpiBytes, 0),
  }
}

/** The five parts of the breakdown add up to walBytes exactly, and the rest of the window is noise. */
export function expectConsistent(cost: InsertCost) {
  expect(cost.attribution).toBe('wal')
  const { heapBytes, indexBytes, otherRelationBytes, fpiBytes, otherBytes } = cost.breakdown!
  expect(heapBytes + indexBytes + otherRelationBytes + fpiBytes + otherBytes).toBe(cost.walBytes)
  expect(otherBytes).toBeGreaterThanOrEqual(0)
  expect(cost.walBytes + (cost.noiseBytes as number)).toBe(cost.windowBytes)
  expect(JSON.parse(JSON.stringify(cost))).toEqual(cost)
}

/**
 * What a measurement must leave exactly as it was: the table's rows and indexes, every relation
 * and namespace, prepared transactions, replication slots, and locks on the table.
 */
export async function footprint(test: { query: (sql: string) => Promise<unknown[]> }, table: string) {
  const regclass = `'${table.replaceAll("'", "''")}'::regclass`
  return {
    rows: await test.query(`select count(*)::text as n, sum(id)::text as ids from ${table}`),
    indexes: await test.query(
      `select indexrelid::regclass::text as name from pg_index where indrelid = ${regclass} order by 1`,
    ),
    relations: await test.query(`select count(*)::text as n from pg_class`),
    namespaces: await test.query(`select count(*)::text as n from pg_namespace`),
    prepared: await test.query(`select count(*)::text as n from pg_prepared_xacts`),
    slots: await test.query(`select count(*)::text as n from pg_replication_slots`),
    locks: await test.query(`select count(*)::text as n from pg_locks where relation = ${regclass}`),
  }
}
