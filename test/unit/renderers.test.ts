import { describe, expect, it } from 'vitest'
import { estimateIngestCeiling, formatResult, predictInsertCost } from '../../src/index.js'
import { partsOf } from '../../src/measure/parts.js'
import { type Result, toHtml, toMarkdown, toVegaLite } from '../../src/report/index.js'
import { viewOf } from '../../src/report/views.js'
import { indexAudit, insertCost, remedies, scenarios, walObservation, writeScenarios } from './fixtures.js'

const prediction = await predictInsertCost({
  description: {
    columns: [
      { name: 'id', type: 'bigint', identity: true },
      { name: 'at', type: 'timestamptz' },
      { name: 'value', type: 'float8' },
    ],
    indexes: [{ name: 'pk', columns: ['id'], keyOrder: 'ascending' }],
  },
})
const ceiling = estimateIngestCeiling({ bytesPerRow: 345 }, { storage: 'gp3', targetRowsPerSec: 50_000 })
const results: Array<[string, Result]> = [
  ['insert-cost', insertCost],
  ['scenarios', scenarios],
  ['index-audit', indexAudit],
  ['remedies', remedies],
  ['prediction', prediction],
  ['ceiling', ceiling],
  ['write-scenarios', writeScenarios],
  ['wal-observation', walObservation],
]

describe.each(results)('%s', (kind, result) => {
  it('is rendered by its kind', () => {
    expect(result.kind).toBe(kind)
    const view = viewOf(result)
    expect(view.rows.length).toBeGreaterThan(0)
    for (const row of view.rows) expect(row).toHaveLength(view.headers.length)
  })

  it('renders as markdown, HTML and Vega-Lite from the same view', () => {
    const view = viewOf(result)
    const markdown = toMarkdown(result)
    expect(markdown.split('\n').filter((line) => line.startsWith('| ')).length).toBe(view.rows.length + 2)
    const html = toHtml(result)
    expect(html.match(/<tr>/g)).toHaveLength(view.rows.length + 1)
    const spec = toVegaLite(result) as { data: { values: unknown[] } }
    expect(spec.data.values).toEqual(view.chart.data)
  })

  it('has a text form with aligned columns and no raw markdown', () => {
    const text = formatResult(result)
    expect(text).not.toContain('| ---')
    expect(text).not.toMatch(/\b1 (rows|records|full-page images|times)\b/)
    const table = text.split('\n').filter((line) => /^-+( +-+)+$/.test(line))
    expect(table.length).toBeGreaterThan(0)
  })
})

describe('a measurement', () => {
  it('splits into parts that add up to its WAL exactly, in every renderer', () => {
    const parts = partsOf(insertCost)
    expect(parts).not.toBeNull()
    expect(parts?.reduce((sum, part) => sum + part.bytes, 0)).toBe(insertCost.walBytes)
    const chart = viewOf(insertCost).chart.data.reduce((sum, datum) => sum + datum.value, 0)
    expect(chart).toBeCloseTo(insertCost.bytesPerRow ?? 0, 6)
  })

  it('escapes what it puts into HTML', () => {
    const named = { ...insertCost, scenario: { ...insertCost.scenario, table: '"<odd>"' } }
    expect(toHtml(named)).toContain('&quot;&lt;odd&gt;&quot;')
  })
})

describe('a ceiling', () => {
  it('names the storage and the commit size, and reads its headroom in words', () => {
    const view = viewOf(ceiling)
    expect(view.title).toBe(
      'Ingest ceiling on gp3, 1 row a commit, 1 connection: 345.0 bytes of WAL a row'.replace('345.0', '345'),
    )
    expect(view.summary).toMatch(/the target needs 550x that/)
    expect(view.summary).toMatch(/17\.3 MB\/s of WAL \(1,490\.4 GB\/day\) at 50,000 rows\/s/)
  })
})

describe('remedies', () => {
  it('give every bar of the chart a distinct label', () => {
    const groups = viewOf(remedies).chart.data.map((datum) => datum.group)
    expect(new Set(groups).size).toBe(groups.length)
  })
})

describe('write scenarios', () => {
  it('show each run per row changed, with its share of HOT updates, and what the audit read of updates', () => {
    const view = viewOf(writeScenarios)
    expect(view.rows.map((row) => row[0])).toEqual(Object.keys(writeScenarios.scenarios))
    const asGiven = writeScenarios.scenarios['as-given']!
    expect(view.rows[0]?.[5]).toBe(Math.round((asGiven.bytesPerModifiedRow ?? 0) * 10) / 10)
    const chart = view.chart.data
      .filter((datum) => datum.group === 'as-given')
      .reduce((sum, datum) => sum + datum.value, 0)
    expect(chart).toBeCloseTo(asGiven.bytesPerModifiedRow ?? 0, 6)
    expect(view.summary).toContain(writeScenarios.summary)
    expect(formatResult(indexAudit)).toContain(`Updates: ${indexAudit.updates.summary}`)
  })
})
