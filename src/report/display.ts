import { viewHtml, viewVegaLite } from './render.js'
import { viewSvg } from './svg.js'
import { type Result, viewOf } from './views.js'

const JUPYTER_DISPLAY = Symbol.for('Jupyter.display')

/**
 * Makes a result render itself in a notebook (Deno's Jupyter kernel, VS Code): the display
 * protocol's method returns text, the chart as SVG with the HTML table, the SVG alone and the
 * Vega-Lite chart. The method is a non-enumerable symbol, so JSON.stringify and equality checks
 * see the plain result.
 *
 * @example
 * withDisplay(await compareScenarios({ table: 't', count: 10_000, setup })) // the notebook draws it
 */
export function withDisplay<T extends Result>(result: T): T {
  Object.defineProperty(result, JUPYTER_DISPLAY, {
    enumerable: false,
    value: () => {
      const view = viewOf(result)
      const chart = viewSvg(view)
      return {
        'text/plain': [view.title, view.subtitle, view.summary].filter(Boolean).join('\n'),
        // The chart drawn as SVG above the table: a front end that shows HTML before Vega-Lite
        // (nbconvert's HTML and PDF exports) shows both; one that draws Vega-Lite draws that.
        'text/html': `${chart}${viewHtml(view)}`,
        'image/svg+xml': chart,
        'application/vnd.vegalite.v5+json': viewVegaLite(view),
      }
    },
  })
  return result
}
