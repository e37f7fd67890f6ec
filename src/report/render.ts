import { formatColumns } from '../core/format.js'
import { colourScale } from './palette.js'
import { type Result, type View, viewOf } from './views.js'

/** Text made safe for HTML content and attribute values. */
export const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char] ?? char,
  )

/**
 * Any walcost result as a markdown table with its one-line summary.
 *
 * @example
 * await writeFile('wal.md', toMarkdown(await measureInsertCost({ table: 't', count: 1_000, setup })))
 */
export function toMarkdown(result: Result): string {
  const view = viewOf(result)
  const cells = (row: string[]) => `| ${row.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`
  return [
    `**${view.title}**`,
    ...(view.subtitle ? ['', view.subtitle] : []),
    '',
    cells(view.headers),
    `|${view.headers.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`,
    ...formatColumns(view.rows).map(cells),
    '',
    view.summary,
  ].join('\n')
}

/**
 * Any walcost result as an HTML table with its summary.
 *
 * @example
 * document.body.innerHTML = toHtml(comparison)
 */
export function toHtml(result: Result): string {
  return viewHtml(viewOf(result))
}

/** A view as toHtml prints it: what the notebook's bundle draws from the view it already has. */
export function viewHtml(view: View): string {
  const row = (cells: string[], tag: 'th' | 'td') =>
    `<tr>${cells.map((cell) => `<${tag}>${escapeHtml(cell)}</${tag}>`).join('')}</tr>`
  const subtitle = view.subtitle ? `<br><small>${escapeHtml(view.subtitle)}</small>` : ''
  return `<div><strong>${escapeHtml(view.title)}</strong>${subtitle}<table><thead>${row(view.headers, 'th')}</thead><tbody>${formatColumns(
    view.rows,
  )
    .map((cells) => row(cells, 'td'))
    .join('')}</tbody></table><p>${escapeHtml(view.summary)}</p></div>`
}

/**
 * Any walcost result as a Vega-Lite v5 spec: stacked bars of heap, index, full-page images and the
 * rest per scenario (a measurement, a prediction), bytes per index (an audit), rows/s per limit (a
 * ceiling); bars that compare (a calibration's estimate and what its run achieved) side by side.
 *
 * @example
 * await writeFile('scenarios.vl.json', JSON.stringify(toVegaLite(comparison)))
 */
export function toVegaLite(result: Result): Record<string, unknown> {
  return viewVegaLite(viewOf(result))
}

/** A view as toVegaLite draws it. */
export function viewVegaLite(view: View): Record<string, unknown> {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    // A short title, whole; the detail below it.
    title: view.subtitle ? { text: view.title, subtitle: view.subtitle } : view.title,
    data: { values: view.chart.data },
    mark: 'bar',
    encoding: {
      // labelLimit 0: long labels are shown whole, so bars that differ only at the end stay distinct.
      y: { field: 'group', type: 'nominal', title: view.chart.axis, sort: null, axis: { labelLimit: 0 } },
      // Parts that add up are stacked; parts that compare stand side by side within their group.
      x: {
        field: 'value',
        type: 'quantitative',
        title: view.chart.valueTitle,
        stack: view.chart.compares ? null : 'zero',
      },
      ...(view.chart.compares && { yOffset: { field: 'part', type: 'nominal' } }),
      // Each part its own colour in every chart (palette.ts), and each legend label whole.
      color: {
        field: 'part',
        type: 'nominal',
        title: null,
        scale: colourScale([...new Set(view.chart.data.map((datum) => datum.part))]),
        legend: { labelLimit: 0 },
      },
      tooltip: [{ field: 'group' }, { field: 'part' }, { field: 'value', format: '.1f' }],
    },
    width: 480,
  }
}
