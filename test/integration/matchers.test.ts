import { describe, expect, it } from 'vitest'
import '../../src/testing/vitest.js'
import { checkWalBudget, measureInsertCost, WalcostError } from '../../src/index.js'

const setup = `create table events (id int8 primary key, kind int4 not null, at timestamptz not null);
               create index events_kind_idx on events (kind, at)`

describe('toStayWithinWalBudget', () => {
  it('passes a measurement within its budget, awaiting the promise', async () => {
    await expect(measureInsertCost({ setup, table: 'events', count: 500 })).toStayWithinWalBudget({
      bytesPerRow: 1_000,
      recordsPerRow: 5,
    })
  })

  it('fails over budget with the measured value and the breakdown by relation in its message', async () => {
    const cost = await measureInsertCost({ setup, table: 'events', count: 500 })
    let failure: Error | undefined
    try {
      await expect(cost).toStayWithinWalBudget({ bytesPerRow: 50, indexes: { events_kind_idx: 10 } })
    } catch (error) {
      failure = error as Error
    }
    expect(failure).toBeDefined()
    expect(failure!.message).toMatch(
      /over the WAL budget: bytesPerRow \d+(\.\d)? > 50, indexes\.events_kind_idx \d+(\.\d)? > 10/,
    )
    expect(failure!.message).toMatch(
      /heap \d+(\.\d)?, index events_kind_idx \d+(\.\d)?, index events_pkey \d+(\.\d)?, full-page images/,
    )
    expect(failure!.message.split('\n').length).toBeLessThanOrEqual(4)
    await expect(cost).not.toStayWithinWalBudget({ bytesPerRow: 50 })
  })

  it('refuses a bound on an index the table does not have, through the matcher too, naming the indexes it has', async () => {
    const cost = await measureInsertCost({ setup, table: 'events', count: 100 })
    const refused = {
      code: 'INVALID_OPTIONS',
      field: 'indexes.no_such_index',
      message: expect.stringContaining(
        '"public"."events" has no index no_such_index (its indexes: events_kind_idx, events_pkey)',
      ),
    }
    expect(() => checkWalBudget(cost, { indexes: { no_such_index: 1_000 } })).toThrow(expect.objectContaining(refused))
    await expect(expect(cost).toStayWithinWalBudget({ indexes: { no_such_index: 1_000 } })).rejects.toMatchObject(
      refused,
    )
  })

  it('refuses an empty budget', async () => {
    const cost = await measureInsertCost({ setup, table: 'events', count: 10 })
    expect(() => checkWalBudget(cost, {})).toThrow(WalcostError)
  })
})
