// walcost/report: every renderer, for a user who prints or charts a result other than as
// formatResult's text (re-exports only).
export { toHtmlReport } from './html-report.js'
export { toHtml, toMarkdown, toVegaLite, withDisplay } from './render.js'
export { formatAudit, formatComparison, formatInsertCost, formatResult, formatScenarios } from './text.js'
export type { Result, View } from './views.js'
