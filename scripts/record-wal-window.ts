// Records a window of real WAL on the embedded PGlite (PostgreSQL 18), with pg_walinspect's reading
// of the same window, for the unit tier's reader test: `npx tsx scripts/record-wal-window.ts`.
// The window holds every index access method, TOAST, full-page images with and without a hole,
// and records that continue on the next page.
import { writeFileSync } from 'node:fs'
import { gzipSync } from 'node:zlib'
import { PGlite } from '@electric-sql/pglite'
import { pg_walinspect } from '@electric-sql/pglite/contrib/pg_walinspect'
import { WalReader } from '../src/decode/reader.js'
import { openSession } from '../src/driver/open.js'
import { walBytes } from '../src/wal/segments.js'
import { readServer, walLayout } from '../src/wal/server.js'
import { insertPosition } from '../src/wal/snapshot.js'
import { batch, MIXED_SETUP, walStatsOf } from '../test/support/wal-window.js'

const db = await PGlite.create({ extensions: { pg_walinspect } })
await db.exec('create extension pg_walinspect')
const session = await openSession(db, {
  connectTimeoutMs: 10_000,
  lockTimeoutMs: 10_000,
  statementTimeoutMs: undefined,
})
await session.exec(MIXED_SETUP.replace('generate_series(1, 20000)', 'generate_series(1, 2000)'))
const layout = walLayout(await readServer(session))
await session.exec('checkpoint')
const start = await insertPosition(session)
await session.exec(batch(100_000, 200))
const end = await insertPosition(session)
await session.query(`select pg_logical_emit_message(true, 'walcost-fixture', 'flush')`)

const probe = new WalReader(layout, start.bytes, end.bytes, () => undefined)
const parts: Uint8Array[] = []
for await (const chunk of walBytes(session, probe.readFrom, end.bytes, layout.segmentSize)) parts.push(chunk.slice())
const bytes = Buffer.concat(parts)
const out = new URL('../test/unit/fixtures/', import.meta.url)
writeFileSync(new URL('wal-window.bin.gz', out), gzipSync(bytes, { level: 9 }))
const expected = await walStatsOf(session, { start, end, xids: [] })
writeFileSync(
  new URL('wal-window.json', out),
  `${JSON.stringify({ layout, start: start.bytes, end: end.bytes, readFrom: probe.readFrom, walStats: expected }, null, 2)}\n`,
)
await session.close()
await db.close()
console.log(`recorded ${bytes.length} bytes of WAL, ${Object.keys(expected).length} record types`)
