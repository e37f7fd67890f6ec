import { formatColumns } from '../core/format.js'
import { escapeHtml } from './render.js'
import { viewSvg } from './svg.js'
import { type Result, viewOf } from './views.js'

// A report that is one file: inline styles, the chart as inline SVG (svg.ts), and a content
// security policy that forbids loading anything, so it opens the same offline, attached to a
// ticket, or years later.

const STYLE = `body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:60rem;color:#222;padding:0 1rem}
h1{font-size:1.3rem;margin-bottom:.2rem}.subtitle{color:#555;margin-top:0}table{border-collapse:collapse;margin:1rem 0}th,td{padding:.25rem .6rem;border-bottom:1px solid #ddd}
td.number{text-align:right;font-variant-numeric:tabular-nums}th{text-align:left;background:#f5f5f5}
svg text{fill:#222}footer{color:#666;font-size:12px}`

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
${viewSvg(view)}
${table}
<p>${escapeHtml(view.summary)}</p>
<footer>walcost: ${escapeHtml(result.kind)}</footer>
</body></html>
`
}
