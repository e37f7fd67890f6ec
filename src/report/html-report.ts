import { formatColumns } from '../core/format.js'
import { partColour } from './palette.js'
import { escapeHtml } from './render.js'
import { type Result, type View, viewOf } from './views.js'

// A report that is one file: inline styles, the chart drawn as inline SVG here, and a content
// security policy that forbids loading anything, so it opens the same offline, attached to a
// ticket, or years later.

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;color:#222;padding:0 1rem}
h1{font-size:1.3rem;margin-bottom:.2rem}.subtitle{color:#555;margin-top:0}table{border-collapse:collapse;margin:1rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #ddd}
td.number{text-align:right;font-variant-numeric:tabular-nums}th{text-align:left;background:#f5f5f5}
svg text{font:12px system-ui,sans-serif;fill:#222}.legend span{display:inline-block;margin-right:1rem}
.legend i{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.1rem}footer{color:#666;font-size:12px}`

/**
 * The view's chart as horizontal bars: one `g.bar` per group, one rect per part, the parts stacked
 * where they add up and side by side, each with its value, where they compare.
 */
function chartSvg(view: View): string {
  const groups = [...new Set(view.chart.data.map((datum) => datum.group))]
  const parts = [...new Set(view.chart.data.map((datum) => datum.part))]
  const compares = view.chart.compares === true
  const ofGroup = (group: string) => view.chart.data.filter((datum) => datum.group === group && datum.value > 0)
  const totals = groups.map((group) => ofGroup(group).reduce((sum, datum) => sum + datum.value, 0))
  const largest = Math.max(...(compares ? view.chart.data.map((datum) => datum.value) : totals), 1e-9)
  const labelWidth = Math.min(320, 12 + 7 * Math.max(...groups.map((group) => group.length), 4))
  const barArea = 480
  const barHeight = compares ? 14 : 18
  const rowHeight = (compares ? parts.length * barHeight : barHeight) + 8
  const height = groups.length * rowHeight + 30
  const bars = groups.map((group, row) => {
    const top = 8 + row * rowHeight
    let x = labelWidth
    const segments = ofGroup(group).map((datum) => {
      const width = (datum.value / largest) * barArea
      const y = compares ? top + parts.indexOf(datum.part) * barHeight : top
      const left = compares ? labelWidth : x
      const rect = `<rect x="${left.toFixed(2)}" y="${y}" width="${width.toFixed(2)}" height="${barHeight - (compares ? 2 : 0)}" fill="${partColour(datum.part)}"><title>${escapeHtml(`${datum.part}: ${datum.value.toFixed(1)}`)}</title></rect>`
      if (!compares) {
        x += width
        return rect
      }
      return `${rect}<text x="${(left + width + 4).toFixed(2)}" y="${y + barHeight - 4}">${datum.value.toFixed(1)}</text>`
    })
    const total = compares
      ? ''
      : `<text x="${(x + 4).toFixed(2)}" y="${top + rowHeight / 2}">${(totals[row] ?? 0).toFixed(1)}</text>`
    return `<g class="bar" data-group="${escapeHtml(group)}"><text x="${labelWidth - 6}" y="${top + (rowHeight - 8) / 2 + 4}" text-anchor="end">${escapeHtml(group)}</text>${segments.join('')}${total}</g>`
  })
  const axis = `<text x="${labelWidth}" y="${height - 6}">${escapeHtml(view.chart.valueTitle)}</text>`
  const legend = parts.map((part) => `<span><i style="background:${partColour(part)}"></i>${escapeHtml(part)}</span>`)
  return `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${labelWidth + barArea + 80}" height="${height}" aria-label="${escapeHtml(view.title)}">${bars.join('')}${axis}</svg><p class="legend">${legend.join('')}</p>`
}

/**
 * Any walcost result as a self-contained HTML page: its title, the chart as inline SVG, the table
 * and the summary. It loads nothing from anywhere (its content security policy forbids it).
 *
 * @example
 * await writeFile('report.html', toHtmlReport(await compareScenarios({ table: 't', count: 10_000, setup })))
 */
export function toHtmlReport(result: Result): string {
  const view = viewOf(result)
  const formatted = formatColumns(view.rows)
  const cell = (text: string, tag: 'th' | 'td', numeric = false) =>
    `<${tag}${numeric ? ' class="number"' : ''}>${escapeHtml(text)}</${tag}>`
  const table = `<table><thead><tr>${view.headers.map((header) => cell(header, 'th')).join('')}</tr></thead><tbody>${formatted
    .map(
      (row, r) =>
        `<tr>${row.map((text, column) => cell(text, 'td', typeof view.rows[r]?.[column] === 'number')).join('')}</tr>`,
    )
    .join('')}</tbody></table>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(view.title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(view.title)}</h1>${view.subtitle ? `<p class="subtitle">${escapeHtml(view.subtitle)}</p>` : ''}
${chartSvg(view)}
${table}
<p>${escapeHtml(view.summary)}</p>
<footer>walcost: ${escapeHtml(result.kind)}</footer>
</body></html>
`
}
