import { parse, type Scene, View } from 'vega'
import { compile, type TopLevelSpec } from 'vega-lite'
import { describe, expect, it } from 'vitest'
import { estimateIngestCeiling, predictInsertCost } from '../../src/index.js'
import { type Result, toVegaLite } from '../../src/report/index.js'
import { partColour } from '../../src/report/palette.js'
import { viewOf } from '../../src/report/views.js'
import { calibration, indexAudit, insertCost, remedies, scenarios, walObservation, writeScenarios } from './fixtures.js'

// Every kind of chart walcost draws, rendered by Vega itself (vega-lite compiled to vega, then to
// SVG, as a notebook's front end draws it): what a person sees, not the spec walcost wrote.

const prediction = await predictInsertCost({
  description: {
    columns: [
      { name: 'id', type: 'bigint', identity: true },
      { name: 'at', type: 'timestamptz' },
      { name: 'payload', type: 'jsonb', avgWidth: 120 },
    ],
    indexes: [
      { name: 'events_pkey', columns: ['id'], keyOrder: 'ascending' },
      {
        name: 'events_payload_with_a_long_descriptive_name_idx',
        columns: ['payload'],
        method: 'gin',
        keys: [{ perRow: 5, distinct: 40, keyBytes: 8 }],
      },
    ],
  },
})

const results: Array<[string, Result]> = [
  ['a measurement', insertCost],
  ['a comparison of scenarios', scenarios],
  ['an index audit', indexAudit],
  ['remedies', remedies],
  ['a prediction', prediction],
  ['a ceiling', estimateIngestCeiling({ bytesPerRow: 345 }, { storage: 'gp3', targetRowsPerSec: 50_000 })],
  ['a calibration', calibration],
  ['write scenarios', writeScenarios],
  ['an observation', walObservation],
]

interface Bar {
  group: string
  part: string
  fill: string
  x: number
  width: number
  y: number
}

/** The chart as Vega draws it: its SVG, and each bar with the datum it stands for. */
async function drawn(result: Result): Promise<{ svg: string; texts: string[]; bars: Bar[] }> {
  const { spec } = compile(toVegaLite(result) as unknown as TopLevelSpec)
  const view = new View(parse(spec), { renderer: 'none' })
  await view.runAsync()
  const svg = await view.toSVG()
  const bars: Bar[] = []
  const visit = (node: Scene & { items?: unknown[]; marktype?: string; role?: string }) => {
    for (const item of (node.items ?? []) as Array<Record<string, unknown> & { items?: unknown[] }>) {
      const datum = item.datum as { group?: string; part?: string } | undefined
      if (node.marktype === 'rect' && node.role === 'mark' && datum?.group !== undefined) {
        bars.push({
          group: datum.group,
          part: datum.part ?? '',
          fill: String(item.fill),
          x: Number(item.x),
          width: Number(item.width),
          y: Number(item.y),
        })
      }
      visit(item as unknown as Scene)
    }
  }
  visit((view.scenegraph() as unknown as { root: Scene }).root)
  view.finalize()
  const texts = [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((match) => unescaped(match[1] ?? ''))
  return { svg, texts, bars }
}

const unescaped = (text: string) =>
  text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&')

describe.each(results)('%s, drawn by Vega', (_, result) => {
  it('shows its title, every bar label and every legend label whole', async () => {
    const view = viewOf(result)
    const { texts } = await drawn(result)
    expect(texts.filter((text) => text.endsWith('…'))).toEqual([])
    expect(texts).toContain(view.title)
    if (view.subtitle) expect(texts).toContain(view.subtitle)
    for (const group of new Set(view.chart.data.map((datum) => datum.group))) expect(texts).toContain(group)
    for (const part of new Set(view.chart.data.map((datum) => datum.part))) expect(texts).toContain(part)
    expect(texts).toContain(view.chart.valueTitle)
  })

  it('gives each part the colour it has in every other chart', async () => {
    const { bars } = await drawn(result)
    expect(bars.length).toBeGreaterThan(0)
    for (const bar of bars) expect(bar.fill, bar.part).toBe(partColour(bar.part))
  })

  it('stacks parts that add up and draws parts that compare side by side, each from the axis', async () => {
    const view = viewOf(result)
    const { bars } = await drawn(result)
    const groups = [...new Set(bars.map((bar) => bar.group))]
    for (const group of groups) {
      const ofGroup = bars.filter((bar) => bar.group === group && bar.width > 0).sort((a, b) => a.x - b.x)
      if (view.chart.compares) {
        for (const bar of ofGroup) expect(bar.x, `${group}: ${bar.part}`).toBeCloseTo(0, 3)
        expect(new Set(ofGroup.map((bar) => bar.y)).size).toBe(ofGroup.length)
      } else {
        // One row a group, each part starting where the one before it ends.
        expect(new Set(ofGroup.map((bar) => bar.y)).size).toBeLessThanOrEqual(1)
        for (const [i, bar] of ofGroup.entries()) {
          const before = ofGroup[i - 1]
          expect(bar.x, `${group}: ${bar.part}`).toBeCloseTo(before ? before.x + before.width : 0, 3)
        }
      }
    }
  })
})
