import { describe, expect, it } from 'vitest'
import { formatColumns } from '../../src/core/format.js'
import { estimateIngestCeiling, formatResult, predictInsertCost } from '../../src/index.js'
import { partsOf } from '../../src/measure/parts.js'
import {
  type Result,
  toHtml,
  toHtmlReport,
  toMarkdown,
  toSvg,
  toVegaLite,
  withDisplay,
} from '../../src/report/index.js'
import { escapeHtml } from '../../src/report/render.js'
import { viewOf } from '../../src/report/views.js'
import { calibration, indexAudit, insertCost, remedies, scenarios, walObservation, writeScenarios } from './fixtures.js'

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

  it('prints the same numbers in text, markdown, HTML, the notebook and the HTML report, with one number of decimals a column', () => {
    const view = viewOf(result)
    const shown = formatColumns(view.rows)
    // The notebook's bundle, as the Jupyter kernel asks a displayed result for it.
    const displayed = withDisplay({ ...result } as Result) as unknown as Record<symbol, () => Record<string, unknown>>
    const bundle = displayed[Symbol.for('Jupyter.display')]?.() ?? {}
    const renderings = {
      // A measurement, a comparison and an audit have text formatters of their own, with more in them.
      text: ['insert-cost', 'scenarios', 'index-audit'].includes(kind) ? null : formatResult(result),
      markdown: toMarkdown(result),
      html: toHtml(result),
      notebook: String(bundle['text/html']),
      report: toHtmlReport(result),
    }
    for (const [r, row] of view.rows.entries()) {
      for (const [c, value] of row.entries()) {
        if (typeof value !== 'number') continue
        const text = shown[r]?.[c] ?? ''
        // Thousands separators, and a column's decimals alike.
        expect(text).toMatch(/^-?\d{1,3}(,\d{3})*(\.\d)?$/)
        const decimals = shown.map((cells) => cells[c] ?? '').filter((_, k) => typeof view.rows[k]?.[c] === 'number')
        expect(new Set(decimals.map((cell) => cell.includes('.'))).size).toBe(1)
        for (const [name, rendered] of Object.entries(renderings))
          if (rendered !== null) expect(rendered, `${name}: ${text}`).toContain(text)
      }
    }
  })

  it("draws its chart as one SVG for the HTML report and the notebook: a bar a group, every part's name whole in the legend, each part the Vega-Lite spec's colour", () => {
    const view = viewOf(result)
    const svg = toSvg(result)
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true)
    const groups = [...new Set(view.chart.data.map((datum) => datum.group))]
    expect([...svg.matchAll(/<g class="bar" data-group="([^"]*)"/g)].map((match) => match[1])).toEqual(
      groups.map(escapeHtml),
    )
    const parts = [...new Set(view.chart.data.map((datum) => datum.part))]
    const legend = [...svg.matchAll(/<g class="legend"><rect [^>]*fill="([^"]+)"\/><text [^>]*>([^<]*)<\/text>/g)]
    const spec = toVegaLite(result) as { encoding: { color: { scale: { domain: string[]; range: string[] } } } }
    const { domain, range } = spec.encoding.color.scale
    expect(legend.map((match) => [match[2], match[1]])).toEqual(
      parts.map((part) => [escapeHtml(part), range[domain.indexOf(part)]]),
    )
    // The value axis says what the bars measure, in its unit.
    expect(svg).toContain(`>${escapeHtml(view.chart.valueTitle)}</text>`)
    const displayed = withDisplay({ ...result } as Result) as unknown as Record<symbol, () => Record<string, unknown>>
    const bundle = displayed[Symbol.for('Jupyter.display')]?.() ?? {}
    expect(bundle['image/svg+xml']).toBe(svg)
    // nbconvert's HTML and PDF show text/html before an image: the chart is in it, above the table.
    expect(String(bundle['text/html']).startsWith(svg)).toBe(true)
    expect(toHtmlReport(result)).toContain(svg)
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
    // 1.5x short, not rounded to 2x (the shipped notebook's gp3 plan: 50,000 rows/s against 33,233).
    const near = estimateIngestCeiling(
      { bytesPerRow: 345 },
      { storage: 'gp3', targetRowsPerSec: 1.5 * ceiling.maxRowsPerSec },
    )
    expect(viewOf(near).summary).toMatch(/the target needs 1\.5x that/)
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

describe('bars that compare', () => {
  it('has a short title, with the fitted figures in a subtitle under it, in every renderer', () => {
    const view = viewOf(calibration)
    expect(view.title).toBe('Ingest calibrated on a scratch copy of "public"."t"')
    expect(view.subtitle).toMatch(/^0\.2 ms a flush, 900 MB\/s, 0\.01 ms a row, 0\.1 ms a commit,/)
    const subtitle = view.subtitle as string
    const spec = toVegaLite(calibration) as { title: { text: string; subtitle: string } }
    expect(spec.title).toEqual({ text: view.title, subtitle })
    expect(toMarkdown(calibration)).toContain(`**${view.title}**\n\n${subtitle}`)
    expect(formatResult(calibration)).toContain(`${view.title}\n${subtitle}`)
    expect(toHtml(calibration)).toContain(`<br><small>${escapeHtml(subtitle)}</small>`)
    expect(toHtmlReport(calibration)).toContain(`<p class="subtitle">${escapeHtml(subtitle)}</p>`)
  })

  it('draws an estimate beside what was achieved in Vega-Lite, not stacked on it', () => {
    const spec = toVegaLite(calibration) as { encoding: { x: { stack: unknown }; yOffset?: { field: string } } }
    expect(spec.encoding.x.stack).toBeNull()
    expect(spec.encoding.yOffset?.field).toBe('part')
    // Parts that add up stay stacked.
    const stacked = toVegaLite(scenarios) as { encoding: { x: { stack: unknown }; yOffset?: unknown } }
    expect(stacked.encoding.x.stack).toBe('zero')
    expect(stacked.encoding.yOffset).toBeUndefined()
  })

  it('draws them side by side in the HTML report, each bar from the axis and as long as its value', () => {
    const html = toHtmlReport(calibration)
    const groups = [...html.matchAll(/<g class="bar"[^>]*>(.*?)<\/g>/g)].map((match) => match[1] as string)
    expect(groups).toHaveLength(2)
    const rects = (group: string) =>
      [...group.matchAll(/<rect x="([\d.]+)" y="(\d+)" width="([\d.]+)"/g)].map((match) => ({
        x: Number(match[1]),
        y: Number(match[2]),
        width: Number(match[3]),
      }))
    const [achieved, estimated] = rects(groups[1] as string)
    // Both start at the axis, one above the other; the longest bar is the largest value.
    expect(achieved?.x).toBe(estimated?.x)
    expect(achieved?.y).not.toBe(estimated?.y)
    expect(achieved?.width).toBeCloseTo(480, 1)
    expect(estimated?.width).toBeCloseTo((79_000 / 86_082) * 480, 1)
    // A stacked chart's second part starts where the first ends.
    const [first, second] = rects(
      [...toHtmlReport(scenarios).matchAll(/<g class="bar"[^>]*>(.*?)<\/g>/g)].map(
        (match) => match[1] as string,
      )[0] as string,
    )
    expect(second?.x).toBeCloseTo((first?.x ?? 0) + (first?.width ?? 0), 1)
  })
})

/** Text matched as it is inside a regular expression. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

describe('colours', () => {
  const scaleOf = (result: Result) => {
    const spec = toVegaLite(result) as { encoding: { color: { scale: { domain: string[]; range: string[] } } } }
    const { domain, range } = spec.encoding.color.scale
    return new Map(domain.map((part, i) => [part, range[i]]))
  }

  it('gives a part the same colour in every chart and renderer, whatever else the chart draws', () => {
    const measured = scaleOf(insertCost)
    const predicted = scaleOf(prediction)
    expect(measured.get('heap')).toBe(predicted.get('heap'))
    expect(measured.get('other')).toBe(predicted.get('other'))
    // A part of the measurement that the prediction has too: the same colour, wherever it is listed.
    const shared = [...measured.keys()].filter((part) => predicted.has(part))
    expect(shared.length).toBeGreaterThanOrEqual(2)
    for (const part of shared) expect(measured.get(part), part).toBe(predicted.get(part))
    // toHtmlReport draws from the same palette as the Vega-Lite spec.
    const report = toHtmlReport(insertCost)
    for (const [part, colour] of measured)
      expect(report, part).toMatch(new RegExp(`fill="${colour}"/><text [^>]*>${literal(escapeHtml(part))}</text>`))
  })
})
