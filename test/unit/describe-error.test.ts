import { describe, expect, it } from 'vitest'
import { describeError, fromServerError, sqlStateOf } from '../../src/core/errors.js'

// A failed query of thousands of rows must not print its statement and values in full: a test log
// of one failure was 167 kB. The chain of causes reads once, innermost first.

/** A query builder's wrapper around the driver's error, as Drizzle throws it. */
function wrapped(statement: string, params: unknown[], cause: unknown): Error {
  return new Error(`Failed query: ${statement}\nparams: ${params.join(',')}`, { cause })
}

describe('describeError', () => {
  const statement = `insert into "orders" ("id", "total") values ${Array.from({ length: 1_500 }, (_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ')}`
  const params = Array.from({ length: 3_000 }, (_, i) => `secret-${i}`)
  const server = Object.assign(new Error('duplicate key value violates unique constraint "orders_pkey"'), {
    code: '23505',
  })

  it('puts the innermost cause first, and the statement it happened in after it, cut at 500 characters', () => {
    const text = describeError(wrapped(statement, params, server))
    expect(
      text.startsWith('duplicate key value violates unique constraint "orders_pkey" (in: Failed query: insert'),
    ).toBe(true)
    expect(text).toMatch(/\.\.\. \(\d+ more characters\)\)$/)
    expect(text.length).toBeLessThan(650)
  })

  it('never prints the parameters', () => {
    expect(describeError(wrapped('insert into t values ($1)', params, server))).not.toContain('secret-')
  })

  it('says a cause once when a wrapper repeats its message', () => {
    const outer = new Error('boom', { cause: new Error('boom') })
    expect(describeError(outer)).toBe('boom')
  })

  it("reads an AggregateError's first error, as a connection to every address of a host fails", () => {
    const refused = Object.assign(new AggregateError([new Error('connect ECONNREFUSED 127.0.0.1:5432')], ''), {
      code: 'ECONNREFUSED',
    })
    expect(describeError(refused)).toBe('connect ECONNREFUSED 127.0.0.1:5432')
  })
})

describe('fromServerError', () => {
  it("takes the SQLSTATE from the driver's error inside a query builder's", () => {
    const server = Object.assign(new Error('value too long for type character varying(3)'), { code: '22001' })
    const error = fromServerError(
      wrapped('insert into t values ($1)', ['abcd'], server),
      'running the batch',
      'BATCH_FAILED',
    )
    expect(sqlStateOf(error)).toBe('22001')
    expect(error.message).toBe(
      'running the batch: value too long for type character varying(3) (in: Failed query: insert into t values ($1)) (SQLSTATE 22001)',
    )
  })
})
