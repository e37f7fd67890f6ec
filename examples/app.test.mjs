// An application's write-path test: a new index or a wider row fails it, with the breakdown.
// Runs on the embedded PGlite: no server needed. In your project: `import 'walcost/vitest'` in a
// setup file, and the same expect(...) in any test.
import { describe, expect, it } from 'vitest'
import 'walcost/vitest'
import { measureInsertCost } from 'walcost'

const schema = `
  create table sessions (
    id uuid primary key,
    user_id int8 not null,
    started_at timestamptz not null default now(),
    user_agent text);
  create index sessions_user_idx on sessions (user_id, started_at);`

describe('the sessions table', () => {
  it('stays within its WAL budget for batched inserts', async () => {
    await expect(measureInsertCost({ setup: schema, table: 'sessions', count: 5_000, method: 'multirow' }))
      .toStayWithinWalBudget({ bytesPerRow: 400, recordsPerRow: 3.2, indexes: { sessions_user_idx: 120 } })
  })
})
