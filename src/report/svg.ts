import { oneDecimal } from '../core/format.js'
import { partColour } from './palette.js'
import { escapeHtml } from './render.js'
import { type Result, type View, viewOf } from './views.js'

const LABEL_CHARACTER_PX = 7
const BAR_AREA_PX = 480
const LEGEND_ROW_PX = 18
/** Between the value axis's title and the legend, so that the title does not read as the legend's. */
const LEGEND_GAP_PX = 10

/**
 * A view's chart as one SVG document, drawn here with no library: horizontal bars, one `g.bar` per
 * group and one rect per part, the parts stacked where they add up and side by side, each with its
 * value, where they compare; the value axis's title (with its unit) under them, and the legend, with
 * every name whole, below that. Each part has palette.ts's colour, as in the Vega-Lite spec.
 */
export function viewSvg(view: View): string {
  const groups = [...new Set(view.chart.data.map((datum) => datum.group))]
  const parts = [...new Set(view.chart.data.map((datum) => datum.part))]
  const compares = view.chart.compares === true
  const ofGroup = (group: string) => view.chart.data.filter((datum) => datum.group === group && datum.value > 0)
  const totals = groups.map((group) => ofGroup(group).reduce((sum, datum) => sum + datum.value, 0))
  const largest = Math.max(...(compares ? view.chart.data.map((datum) => datum.value) : totals), 1e-9)
  const labelWidth = Math.min(320, 12 + LABEL_CHARACTER_PX * Math.max(...groups.map((group) => group.length), 4))
  const barHeight = compares ? 14 : 18
  const rowHeight = (compares ? parts.length * barHeight : barHeight) + 8
  const barsHeight = groups.length * rowHeight + 30
  const bars = groups.map((group, row) => {
    const top = 8 + row * rowHeight
    let x = labelWidth
    const segments = ofGroup(group).map((datum) => {
      const width = (datum.value / largest) * BAR_AREA_PX
      const y = compares ? top + parts.indexOf(datum.part) * barHeight : top
      const left = compares ? labelWidth : x
      const rect = `<rect x="${left.toFixed(2)}" y="${y}" width="${width.toFixed(2)}" height="${barHeight - (compares ? 2 : 0)}" fill="${partColour(datum.part)}"><title>${escapeHtml(`${datum.part}: ${oneDecimal(datum.value)}`)}</title></rect>`
      if (!compares) {
        x += width
        return rect
      }
      return `${rect}<text x="${(left + width + 4).toFixed(2)}" y="${y + barHeight - 4}">${oneDecimal(datum.value)}</text>`
    })
    const total = compares
      ? ''
      : `<text x="${(x + 4).toFixed(2)}" y="${top + rowHeight / 2}">${oneDecimal(totals[row] ?? 0)}</text>`
    return `<g class="bar" data-group="${escapeHtml(group)}"><text x="${labelWidth - 6}" y="${top + (rowHeight - 8) / 2 + 4}" text-anchor="end">${escapeHtml(group)}</text>${segments.join('')}${total}</g>`
  })
  const axis = `<text class="axis" x="${labelWidth}" y="${barsHeight - 6}">${escapeHtml(view.chart.valueTitle)}</text>`
  // One legend entry a row: a name is never cut, however long.
  const legend = parts.map((part, index) => {
    const y = barsHeight + LEGEND_GAP_PX + index * LEGEND_ROW_PX
    return `<g class="legend"><rect x="${labelWidth}" y="${y}" width="12" height="12" fill="${partColour(part)}"/><text x="${labelWidth + 18}" y="${y + 10}">${escapeHtml(part)}</text></g>`
  })
  const widest = Math.max(
    labelWidth + BAR_AREA_PX + 80,
    ...parts.map((part) => labelWidth + 26 + LABEL_CHARACTER_PX * part.length),
  )
  const height = barsHeight + LEGEND_GAP_PX + parts.length * LEGEND_ROW_PX + 6
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${widest}" height="${height}" font-family="system-ui, sans-serif" font-size="12" aria-label="${escapeHtml(view.title)}">${bars.join('')}${axis}${legend.join('')}</svg>`
}

/**
 * Any walcost result's chart as an SVG image, the one toHtmlReport draws and a notebook gets beside
 * the Vega-Lite spec (as `image/svg+xml`), so that an exported notebook or a document shows it
 * without running Vega.
 *
 * @example
 * await writeFile('scenarios.svg', toSvg(await compareScenarios({ table: 't', count: 10_000, setup })))
 */
export function toSvg(result: Result): string {
  return viewSvg(viewOf(result))
}
