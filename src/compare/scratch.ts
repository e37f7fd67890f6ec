import { randomBytes } from 'node:crypto'
import { fromServerError, WalcostError } from '../core/errors.js'
import type { Session } from '../driver/types.js'
import { type Index, quoteIdent, relationPages, resolveTable, type Table } from '../measure/catalog.js'
import type { InsertCost } from '../measure/result.js'

// A scratch copy stands in for the table on a real server: built inside a transaction that is
// rolled back, it never locks the real table beyond a read, needs no ownership of it to drop its
// indexes, and, built by the same statements from the same rows, starts every run of a comparison
// from the same pages.

/** A copy of the table in its schema, with the real names to report its measurements under. */
export interface ScratchCopy {
  /** Schema-qualified and quoted. */
  quoted: string
  /** Real rows copied in. */
  rows: number
  /** The copy's counterpart of a real index. */
  indexName(real: string): string
  /** A measurement on the copy, named as the real table's: its table, indexes and other relations. */
  asReal(cost: InsertCost): InsertCost
}

/** Storage parameters a run's table is rewritten with. */
export interface Storage {
  fillfactor: number
}

/** What the runs do to the real table with runsOn 'table', as the refusals that offer it say. */
export const ON_THE_TABLE =
  "runsOn: 'table' (--runs-on table) measures the real table itself: its runs write to it and roll back, leaving dead tuples, and what a run changes in it (an index dropped, a migration) locks it until that run rolls back. Nothing was measured."

/**
 * Whether a copy can stand in for the table: `refusal` says why not (it needs CREATE on the schema
 * and SELECT on the table), as the error a comparison fails with; `gaps` what its numbers leave out
 * (a copy has no triggers and no foreign keys, so their writes to other tables, and the parents'
 * lock records, are not measured).
 */
export async function scratchCopyFitness(
  session: Session,
  table: Table,
): Promise<{ refusal: WalcostError | null; gaps: string[] }> {
  const [row] = await session.query<{
    triggers: string[] | null
    foreign_keys: string[] | null
    may_create: boolean
    may_select: boolean
    role: string
  }>(
    `select (select array_agg(tgname::text order by tgname) from pg_trigger where tgrelid = $1::oid and not tgisinternal) as triggers,
            (select array_agg(conname::text order by conname) from pg_constraint where conrelid = $1::oid and contype = 'f') as foreign_keys,
            has_schema_privilege(current_user, $2, 'CREATE') as may_create,
            has_table_privilege(current_user, $1::oid, 'SELECT') as may_select,
            current_user::text as role`,
    [table.oid, table.schema],
  )
  const role = quoteIdent(row?.role ?? 'the role')
  const schema = quoteIdent(table.schema)
  const missing = [
    ...(row?.may_create
      ? []
      : [{ privilege: `CREATE on schema ${schema}`, grant: `GRANT CREATE ON SCHEMA ${schema} TO ${role}` }]),
    ...(row?.may_select
      ? []
      : [{ privilege: `SELECT on ${table.quoted}`, grant: `GRANT SELECT ON ${table.quoted} TO ${role}` }]),
  ]
  const refusal =
    missing.length === 0
      ? null
      : new WalcostError(
          'PERMISSION_DENIED',
          `the runs measure a scratch copy of ${table.quoted}, created in schema ${schema} from its newest rows and removed by a rollback, so that the real table is never written; the role ${role} lacks ${missing.map((entry) => entry.privilege).join(' and ')}. ${missing.map((entry) => entry.grant).join('; ')} lets it copy, or ${ON_THE_TABLE}`,
          { field: 'runsOn' },
        )
  const gaps = [
    ...(row?.triggers
      ? [`the triggers ${row.triggers.join(', ')} (the copy has none: what they write is not measured)`]
      : []),
    ...(row?.foreign_keys
      ? [`the foreign keys ${row.foreign_keys.join(', ')} (the copy has none: the parents' row locks are not measured)`]
      : []),
  ]
  return { refusal, gaps }
}

/**
 * Runs on the real table write to it (and roll back): a missing privilege is said before the first
 * run rather than as the first batch's failure, naming the privilege and the table.
 */
export async function requireTablePrivileges(session: Session, table: Table, privileges: string[]): Promise<void> {
  const rows = await session.query<{ privilege: string; held: boolean; role: string }>(
    `select privilege, has_table_privilege(current_user, $1::oid, privilege) as held, current_user::text as role
       from unnest($2::text[]) as privilege`,
    [table.oid, privileges],
  )
  const missing = rows.filter((row) => !row.held).map((row) => row.privilege)
  if (missing.length === 0) return
  const role = quoteIdent(rows[0]?.role ?? 'the role')
  throw new WalcostError(
    'PERMISSION_DENIED',
    `runsOn: 'table' (--runs-on table) measures by writing to ${table.quoted} and rolling back, and the role ${role} lacks ${missing.join(' and ')} on it: GRANT ${missing.join(', ')} ON ${table.quoted} TO ${role}, or measure on a scratch copy (runsOn: 'copy', the default), which needs only SELECT on the table and CREATE on its schema. Nothing was measured.`,
    { field: 'runsOn' },
  )
}

/**
 * Builds the copy inside the caller's transaction: CREATE TABLE ... (LIKE ... INCLUDING ALL), what
 * LIKE leaves out (unlogged-ness, storage parameters, sequences of its own), then the newest
 * `sampleRows` rows (the table's last pages, where new rows and keys land), and ANALYZE.
 */
export async function buildScratchCopy(
  session: Session,
  table: Table,
  sampleRows: number,
  storage?: Storage,
): Promise<ScratchCopy> {
  const name = `walcost_scratch_${randomBytes(4).toString('hex')}`
  const quoted = `${quoteIdent(table.schema)}.${quoteIdent(name)}`
  try {
    await session.exec(
      `create ${table.unlogged ? 'unlogged ' : ''}table ${quoted} (like ${table.quoted} including all)`,
    )
  } catch (error) {
    const failure = fromServerError(
      error,
      `creating a scratch copy of ${table.quoted} (inside a transaction that is rolled back)`,
    )
    if (failure.code === 'PERMISSION_DENIED') {
      throw new WalcostError(
        'PERMISSION_DENIED',
        `walcost measures on a scratch copy created in schema ${quoteIdent(table.schema)} and removed by a rollback: GRANT CREATE ON SCHEMA ${quoteIdent(table.schema)} TO the role.`,
        { cause: error },
      )
    }
    throw failure
  }
  for (const option of table.options) {
    const [key, value] = option.split(/=(.*)/s)
    await session.exec(`alter table ${quoted} set (${quoteIdent(key ?? '')} = ${quoteLiteral(value ?? '')})`)
  }
  if (storage) await session.exec(`alter table ${quoted} set (fillfactor = ${storage.fillfactor})`)
  // LIKE ... INCLUDING ALL gives identity columns sequences of their own, but copies nextval() defaults.
  const sequenced = table.columns.filter((column) => column.sequenced && column.identity === '')
  for (const [i, { name: column }] of sequenced.entries()) {
    const sequence = `${quoteIdent(table.schema)}.${quoteIdent(`${name}_seq${i}`)}`
    await session.exec(`create sequence ${sequence} owned by ${quoted}.${quoteIdent(column)};
      alter table ${quoted} alter column ${quoteIdent(column)} set default nextval(${quoteLiteral(sequence)})`)
  }
  const rows = await copyNewestRows(session, table, quoted, sampleRows)
  const copy = await resolveTable(session, quoted)
  const counterparts = matchIndexes(table.indexes, copy.indexes)
  const realIndex = new Map(counterparts.map(({ real, copy }) => [copy, real.name]))
  const copyIndex = new Map(counterparts.map(({ real, copy }) => [real.name, copy]))
  const realName = (relation: string) => realIndex.get(relation) ?? relation.replaceAll(name, table.name)
  return {
    quoted,
    rows,
    indexName: (real) => copyIndex.get(real) ?? real,
    asReal: (cost) => ({
      ...cost,
      indexes: cost.indexes.map((index) => ({ ...index, name: realName(index.name) })),
      otherRelations: cost.otherRelations.map((relation) => ({ ...relation, name: realName(relation.name) })),
      scenario: { ...cost.scenario, table: table.quoted, droppedIndexes: cost.scenario.droppedIndexes.map(realName) },
    }),
  }
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`
}

/**
 * Empties a committed scratch copy and fills it again as buildScratchCopy did: runs that commit on
 * it each start from the table as the first one had it, not from what the runs before added.
 */
export async function refillScratchCopy(
  session: Session,
  table: Table,
  copy: string,
  sampleRows: number,
): Promise<void> {
  await session.exec(`truncate ${copy}`)
  await copyNewestRows(session, table, copy, sampleRows)
}

/**
 * Copies the rows of the table's last pages, about `sampleRows` of them (all of a smaller table),
 * in physical order: the same rows in the same order every time, so every copy is built alike.
 */
async function copyNewestRows(session: Session, table: Table, copy: string, sampleRows: number): Promise<number> {
  if (sampleRows > 0) {
    const columns = table.columns.filter((column) => !column.generated)
    const list = columns.map((column) => quoteIdent(column.name)).join(', ')
    const override = columns.some((column) => column.identity === 'a') ? 'overriding system value' : ''
    const pages = await relationPages(session, table)
    const [shape] = await session.query<{ rows_per_page: number | null }>(
      `select case when relpages > 0 and reltuples > 0 then reltuples / relpages end as rows_per_page
         from pg_class where oid = $1::oid`,
      [table.oid],
    )
    // A TID range scan reads only the last pages, however large the table. The statistics only
    // guess how many hold sampleRows rows (a quarter more than they say); the range grows until it
    // holds them, so the copy has the newest sampleRows rows whatever the statistics say.
    let wanted = shape?.rows_per_page ? Math.ceil((1.25 * sampleRows) / shape.rows_per_page) : pages
    let from = Math.max(0, pages - wanted)
    while (from > 0) {
      const [found] = await session.query<{ rows: string }>(
        `select count(*)::text as rows from ${table.quoted} where ctid >= $1::tid`,
        [`(${from},0)`],
      )
      if (Number(found?.rows ?? 0) >= sampleRows) break
      wanted *= 4
      from = Math.max(0, pages - wanted)
    }
    await session.exec(
      `insert into ${copy} (${list}) ${override}
       select ${list} from (select ctid as walcost_ctid, ${list} from ${table.quoted}
                             where ctid >= '(${from},0)'::tid order by ctid desc limit ${sampleRows}) newest
        order by walcost_ctid`,
    )
  }
  // Sequences of the copy continue past the rows copied.
  const sequences = await session.query<{ column: string; sequence: string }>(
    `select a.attname as column, pg_get_serial_sequence($1, a.attname) as sequence from pg_attribute a
      where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped and pg_get_serial_sequence($1, a.attname) is not null`,
    [copy],
  )
  for (const { column, sequence } of sequences) {
    await session.query(
      `select setval($1::regclass, coalesce((select max(${quoteIdent(column)}) from ${copy}), 0) + 1, false)`,
      [sequence],
    )
  }
  await session.exec(`analyze ${copy}`)
  const [count] = await session.query<{ n: string }>(`select count(*)::text as n from ${copy}`)
  return Number(count?.n ?? 0)
}

/** Each real index's counterpart on the copy, by definition (names differ). */
function matchIndexes(real: Index[], copies: Index[]): Array<{ real: Index; copy: string }> {
  const unmatched = [...copies]
  return real.map((index) => {
    const at = unmatched.findIndex((copy) => copy.signature === index.signature)
    const [copy] = at < 0 ? [] : unmatched.splice(at, 1)
    if (!copy) {
      throw new WalcostError(
        'UNSUPPORTED_TABLE',
        `the scratch copy has no counterpart of index ${index.name} (${index.definition}); CREATE TABLE ... LIKE could not copy it.`,
      )
    }
    return { real: index, copy: copy.name }
  })
}
