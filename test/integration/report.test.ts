import { beforeAll, describe, expect, it } from 'vitest'
import { compareScenarios, estimateIngestCeiling, measureInsertCost, predictInsertCost } from '../../src/index.js'
import { type Result, toMarkdown, toVegaLite } from '../../src/report/index.js'

const setup = `create table t (id int8 primary key, at timestamptz not null, v float8);
               create index t_at_idx on t (at);
               insert into t select i, now(), i from generate_series(1, 2000) i`

describe('every result renders as markdown, Vega-Lite and in a notebook', () => {
  const results: Record<string, Result> = {}
  beforeAll(async () => {
    results.measurement = await measureInsertCost({ setup, table: 't', count: 500 })
    results.comparison = await compareScenarios({ setup, table: 't', count: 500 })
    results.prediction = await predictInsertCost({ setup, table: 't' })
    results.ceiling = estimateIngestCeiling(results.prediction as never, { targetRowsPerSec: 10_000 })
  })

  it.each(['measurement', 'comparison', 'prediction', 'ceiling'])('%s', (kind) => {
    const result = results[kind]!
    const markdown = toMarkdown(result)
    expect(markdown).toMatch(/^\*\*.+\*\*\n\n\| .+ \|\n\| --- \|( ---: \|)+\n(\| .+ \|\n)+\n.+$/)
    const spec = toVegaLite(result) as { $schema: string; data: { values: Array<{ value: number }> } }
    expect(spec.$schema).toBe('https://vega.github.io/schema/vega-lite/v5.json')
    expect(spec.data.values.length).toBeGreaterThan(0)
    for (const datum of spec.data.values) expect(Number.isFinite(datum.value)).toBe(true)
    const display = (result as unknown as Record<symbol, () => Record<string, unknown>>)[
      Symbol.for('Jupyter.display')
    ]!()
    expect(Object.keys(display).sort()).toEqual([
      'application/vnd.vegalite.v5+json',
      'image/svg+xml',
      'text/html',
      'text/plain',
    ])
    // The chart as SVG, then the table: what an exported notebook shows.
    const svg = String(display['image/svg+xml'])
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    expect(String(display['text/html']).startsWith(svg)).toBe(true)
    expect(String(display['text/html']).slice(svg.length)).toMatch(/^<div><strong>.*<table>.*<\/table>/)
    // The display method is invisible to JSON and to the keys a caller iterates.
    expect(Object.keys(result)).not.toContain('Symbol(Jupyter.display)')
    expect(JSON.stringify(result)).not.toContain('Jupyter')
  })

  it('draws the comparison as stacked parts per scenario', () => {
    const spec = toVegaLite(results.comparison!) as { data: { values: Array<{ group: string; part: string }> } }
    const groups = new Set(spec.data.values.map((datum) => datum.group))
    expect([...groups]).toEqual(['after-checkpoint', 'steady', 'no-indexes', 'without:t_at_idx', 'without:t_pkey'])
    expect(new Set(spec.data.values.map((datum) => datum.part))).toEqual(
      new Set(['heap', 'index', 'full-page images', 'other']),
    )
  })
})
