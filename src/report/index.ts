// walcost/report: every renderer, for a user who prints or charts a result other than as
// formatResult's text (re-exports only).

export { withDisplay } from './display.js'
export { toHtmlReport } from './html-report.js'
export { toHtml, toMarkdown, toVegaLite } from './render.js'
export { toSvg } from './svg.js'
export { formatAudit, formatComparison, formatInsertCost, formatResult, formatScenarios } from './text.js'
export type { Result, View } from './views.js'
