// The field notes' table on the embedded PGlite: measured, predicted, and what it means for ingest
// on gp3 and on local NVMe. The notebook field-notes.ipynb (Deno kernel) shows the same as tables
// and charts.
// Run: node examples/field-notes.mjs (after npm install, which builds the package).

// cell: import
import { comparePrediction, estimateIngestCeiling, fieldNotesInsert, fieldNotesSetup, measureInsertCost, predictInsertCost } from 'walcost'
import { toMarkdown } from 'walcost/report'

// cell: measure
const table = 'walcost_demo.device_metrics'
const setup = `${fieldNotesSetup(500_000)}; analyze ${table}`
const cost = await measureInsertCost({ setup, table, sql: fieldNotesInsert(500_000, 100_000) })
console.log(toMarkdown(cost))

// cell: predict
const prediction = await predictInsertCost({ setup, table })
const comparison = comparePrediction(prediction, cost)
console.log(toMarkdown(prediction))
console.log(`predicted ${comparison.total.predicted.toFixed(1)} bytes/row, measured ${comparison.total.measured.toFixed(1)} (${comparison.total.errorPct.toFixed(1)}%)`)

// cell: ceiling
const ceilings = ['gp3', 'nvme'].map((storage) => estimateIngestCeiling(cost, { storage, targetRowsPerSec: 50_000, rowsPerCommit: 100, connections: 8 }))
for (const ceiling of ceilings) console.log(toMarkdown(ceiling))
