// An application's write-path test: the app's own repository function and its Drizzle query,
// measured by walcost inside a transaction it rolls back. A new index or a wider row fails it,
// with the breakdown. On the embedded PGlite (no server needed) and, with DATABASE_URL, on that
// server too. In your project: `import 'walcost/vitest'` in a setup file, and the same expect(...)
// in any test.
import { drizzle as drizzleOnPg } from 'drizzle-orm/node-postgres'
import { bigint, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { drizzle as drizzleOnPglite } from 'drizzle-orm/pglite'
import { describe, expect, it } from 'vitest'
import 'walcost/vitest'
import { measureInsertCost } from 'walcost'

const schema = `
  create table if not exists sessions (
    id uuid primary key,
    user_id int8 not null,
    started_at timestamptz not null default now(),
    user_agent text);
  create index if not exists sessions_user_idx on sessions (user_id, started_at);`

// The app's code as it is in the app: a repository function over its database client...
async function insertSessions(client, sessions) {
  for (const session of sessions) {
    await client.query('insert into sessions (id, user_id, user_agent) values ($1, $2, $3)', [
      session.id,
      session.userId,
      session.userAgent,
    ])
  }
}

// ...and the same insert through its Drizzle schema.
const sessionsTable = pgTable('sessions', {
  id: uuid('id').primaryKey(),
  userId: bigint('user_id', { mode: 'number' }).notNull(),
  startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
  userAgent: text('user_agent'),
})

const sessions = Array.from({ length: 1_000 }, (_, i) => ({
  id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  userId: (i * 7919) % 5_000,
  userAgent: i % 4 === 0 ? null : 'Mozilla/5.0 (X11; Linux x86_64)',
}))

const servers = [
  { name: 'the embedded PGlite', db: undefined, drizzle: drizzleOnPglite },
  ...(process.env.DATABASE_URL ? [{ name: 'DATABASE_URL', db: process.env.DATABASE_URL, drizzle: drizzleOnPg }] : []),
]

describe.each(servers)('the sessions table on $name', ({ db, drizzle }) => {
  const budget = { bytesPerRow: 400, recordsPerRow: 3.2, indexes: { sessions_user_idx: 120 } }

  it('stays within its WAL budget for the repository function', async () => {
    await expect(
      measureInsertCost({ db, setup: schema, table: 'sessions', run: (client) => insertSessions(client, sessions) }),
    ).toStayWithinWalBudget(budget)
  })

  it('stays within it for the Drizzle insert too', async () => {
    await expect(
      measureInsertCost({
        db,
        setup: schema,
        table: 'sessions',
        run: (client) => drizzle(client).insert(sessionsTable).values(sessions),
      }),
    ).toStayWithinWalBudget(budget)
  })
})
