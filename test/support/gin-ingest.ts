import { createHash } from 'node:crypto'
import { availableParallelism } from 'node:os'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { calibrateIngest, estimateIngestCeiling, type InsertCost, measureInsertCost } from '../../src/index.js'

/**
 * Documents as apps keep them: a jsonb column under GIN jsonb_ops and jsonb_path_ops, both with
 * the default fastupdate (a pending list of 4 MB), and three tags under GIN without one.
 */
export const GIN_TABLE = 'documents'

/** The document of row `id`, as jsonb's text. */
const documentOf = (id: number) =>
  JSON.stringify({
    kind: `k${id % 40}`,
    user: { id: id % 5_000, plan: ['free', 'pro', 'team'][id % 3] },
    items: [id % 97, id % 89, id % 83],
    note: createHash('md5').update(String(id)).digest('hex'),
  })

const tagsOf = (id: number) => `{t${id % 13},t${id % 17},t${id % 19}}`

/** Row `id` as the app sends it: a new document, its values unlike any row's before it. */
const rowOf = (id: number) => ({
  id: String(id),
  created: '2026-06-01 00:00:00+00',
  body: documentOf(id),
  tags: tagsOf(id),
})

/** `count` new rows from id `from` on. */
function* newRows(from: number, count: number): Generator<ReturnType<typeof rowOf>> {
  for (let id = from; id < from + count; id++) yield rowOf(id)
}

/** Ids of rows measured (and rolled back) start here, apart from the rows committed. */
const MEASURED_IDS = 1_000_000_000

/**
 * The table with `rows` rows, its indexes built over them. Autovacuum is off for it: its VACUUM
 * after a round's 60,000 rows would merge the lists and take a core in the next round's midst.
 */
export function ginTableSetup(rows: number): string {
  return `create table ${GIN_TABLE} (id int8 primary key, created timestamptz not null, body jsonb not null, tags text[] not null)
      with (autovacuum_enabled = off);
    insert into ${GIN_TABLE}
      select i, timestamptz '2026-01-01' + i * interval '1 s',
             jsonb_build_object('kind', 'k' || i % 40, 'user', jsonb_build_object('id', i % 5000, 'plan', (array['free', 'pro', 'team'])[1 + i % 3]),
                                'items', jsonb_build_array(i % 97, i % 89, i % 83), 'note', md5(i::text)),
             array['t' || i % 13, 't' || i % 17, 't' || i % 19]
        from generate_series(1, ${rows}) i;
    create index ${GIN_TABLE}_body_idx on ${GIN_TABLE} using gin (body);
    create index ${GIN_TABLE}_body_path_idx on ${GIN_TABLE} using gin (body jsonb_path_ops);
    create index ${GIN_TABLE}_tags_idx on ${GIN_TABLE} using gin (tags) with (fastupdate = off)`
}

/** Rows a commit of the committed ingest, and its commits: 60,000 rows, over four merges of each list. */
const ROWS_PER_COMMIT = 1_000
const COMMITS = 60

/** The batch a user measures first, too small to merge a pending list of 4 MB. */
const SHORT_BATCH = 10_000

/** One round: a measurement of the batch the note suggests, and a committed ingest right after it. */
export interface GinRound {
  cost: InsertCost
  /** A plain COPY's time a row, as many rows in one transaction, rolled back. */
  plainMsPerRow: number
  achieved: number
  /** The cluster's WAL over the committed ingest a row: commits, merges, any full-page image. */
  committedBytesPerRow: number
  estimate: number
  /** estimate / achieved */
  ratio: number
}

export interface GinIngestCase {
  /** The measurement of SHORT_BATCH rows and its pending-list notes. */
  short: InsertCost
  notes: string[]
  /** The rows the notes say a batch needs to include a merge of every list. */
  suggested: number
  /** The short batch's estimate over the rounds' median achieved. */
  shortRatio: number
  rounds: GinRound[]
  /** The median of the rounds' ratios. */
  ratio: number
}

/**
 * A ceiling on a jsonb-under-GIN table against a committed ingest into the same table: the default
 * batch (which fills the pending lists without merging them) says so and names the rows a batch
 * needs; then `rounds` rounds of a measurement of that many rows (after a VACUUM, which empties the
 * lists: the batch then pays the merges it names, as steady ingest does), after a plain COPY of as
 * many in one transaction, rolled back, and before a committed ingest
 * of 60,000 rows, 1,000 a COPY and a commit, from one connection. Each round's estimate is planned
 * as the ingest sends its rows, with the flush and commit times calibrateIngest fits on a scratch
 * copy of the table and the machine's cores; pairing
 * each estimate with the ingest run right after it keeps a slow spell of a shared machine on both
 * sides of a ratio.
 */
export async function ginIngestCase(url: string, { rounds = 3 }: { rounds?: number } = {}): Promise<GinIngestCase> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`vacuum analyze ${GIN_TABLE}`)
    // The app's own rows, as it measures them: new documents, whose values (a hash among them) the
    // index has not seen. (Synthetic rows of count repeat sampled documents, whose entries are
    // mostly in the index already.)
    let measuredId = MEASURED_IDS
    const measure = (count: number) => {
      // Made before the measurement, as the ingest's are before its clock: making them is the
      // client's work, which the measurement would otherwise time with the server's.
      const rows = [...newRows(measuredId, count)]
      measuredId += count
      return measureInsertCost({ db: url, table: GIN_TABLE, rows, method: 'copy' })
    }
    const short = await measure(SHORT_BATCH)
    const notes = short.notes.filter((note) => note.includes('pending list'))
    const suggested = Math.max(
      ...notes.map((note) => Number(/at least ([\d,]+) rows/.exec(note)?.[1]?.replaceAll(',', '') ?? Number.NaN)),
    )
    // The storage's flush and a commit's own time, from one connection's committed COPYs on a
    // scratch copy of the table's last 10,000 rows (one short round: only the flush and the commit
    // are taken from it; at 1,000 rows a commit the server's time a row binds).
    const calibration = await calibrateIngest({
      db: url,
      table: GIN_TABLE,
      rowsPerCommit: [100, ROWS_PER_COMMIT],
      connections: [1],
      rounds: 1,
      secondsPerRun: 1,
      sampleRows: 10_000,
      cores: availableParallelism(),
    })
    const plan = (cost: InsertCost) =>
      estimateIngestCeiling(cost, {
        storage: calibration.storage,
        cores: availableParallelism(),
        rowsPerCommit: ROWS_PER_COMMIT,
        method: 'copy',
        connections: 1,
        commitMs: calibration.commitMs,
      }).maxRowsPerSec
    const [{ max }] = (await client.query<{ max: string }>(`select max(id)::text as max from ${GIN_TABLE}`)).rows as [
      { max: string },
    ]
    let nextId = Number(max) + 1
    const measured: GinRound[] = []
    for (let round = 0; round < rounds; round++) {
      // A checkpoint now, not one that the WAL of the rounds before calls for midway through a
      // measurement or an ingest (its images would fall on one side of the pair).
      await client.query('checkpoint')
      await client.query(`vacuum ${GIN_TABLE}`)
      // As many such rows by a plain COPY in one transaction, rolled back: the server's time a row
      // for a batch that size, with no walcost around it. It takes the images of the pages a batch
      // touches first after the checkpoint, which the measurement and the ingest after it then
      // find taken, as batches between checkpoints do.
      const batchText = copyText(newRows(measuredId, suggested))
      measuredId += suggested
      await client.query('begin')
      const copied = performance.now()
      await copyRows(client, batchText)
      const plainMsPerRow = (performance.now() - copied) / suggested
      await client.query('rollback')
      await client.query(`vacuum ${GIN_TABLE}`)
      const cost = await measure(suggested)
      // The rows are made before the clock starts: the load generator's work is not the server's.
      const commits = Array.from({ length: COMMITS }, (_, commit) =>
        copyText(newRows(nextId + commit * ROWS_PER_COMMIT, ROWS_PER_COMMIT)),
      )
      nextId += COMMITS * ROWS_PER_COMMIT
      const walBefore = await walInsertBytes(client)
      const began = performance.now()
      for (const rows of commits) await copyRows(client, rows)
      const achieved = (COMMITS * ROWS_PER_COMMIT * 1_000) / (performance.now() - began)
      const committedBytesPerRow = ((await walInsertBytes(client)) - walBefore) / (COMMITS * ROWS_PER_COMMIT)
      const estimate = plan(cost)
      measured.push({ cost, plainMsPerRow, achieved, committedBytesPerRow, estimate, ratio: estimate / achieved })
    }
    return {
      short,
      notes,
      suggested,
      shortRatio: plan(short) / median(measured.map((round) => round.achieved)),
      rounds: measured,
      ratio: median(measured.map((round) => round.ratio)),
    }
  } finally {
    await client.end()
  }
}

/** The WAL insert position in bytes from 0/0. */
async function walInsertBytes(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    `select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes`,
  )
  return Number(rows[0]?.bytes)
}

/** Rows as COPY's text format has them (no value here needs escaping). */
function copyText(rows: Iterable<ReturnType<typeof rowOf>>): string {
  let text = ''
  for (const row of rows) text += `${Object.values(row).join('\t')}\n`
  return text
}

/** The middle value (the upper of the two middle ones for an even count). */
export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

/** One COPY: in autocommit, one transaction and one commit. */
function copyRows(client: pg.Client, rows: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = client.query(copyFrom(`copy ${GIN_TABLE} (id, created, body, tags) from stdin`))
    stream.on('finish', resolve)
    stream.on('error', reject)
    stream.end(rows)
  })
}
