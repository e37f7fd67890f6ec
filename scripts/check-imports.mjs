// Fails on any import cycle in src/, on any import against the direction of the layers (a layer
// imports only those before it, types included), and on a file in src/ that belongs to no layer.
// The surface (index.ts, api.ts) sits between the layers and the command line.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const LAYERS = [
  'core', // errors, options, defaults, units and formatting: what every layer shares
  'driver', // one Session over PGlite and pg; nothing else imports pg or PGlite at run time
  'decode', // the WAL format: pages, records, their types, the rows of insert records
  'wal', // reading the server: its facts, LSN snapshots, its WAL, and attributing it
  'measure', // one measurement (and one observation): prepare, snapshot, batch, attribute, undo
  'traffic', // committed traffic followed for hours: reconnecting, bounded series, the Prometheus exporter
  'compare', // what composes measurements: scenarios, audit, remedies, migration, the demo
  'model', // the predictor and the ingest ceiling
  'report', // renderers: pure functions of a result
  'ci', // budgets, summaries, walcost check
  'testing', // the vitest and jest matchers
  'api.ts', // the exported entry points, and index.ts and schemas.ts re-exporting them, the types and the schemas
  'cli', // the command line: a thin second entry over the entry points
]
const root = new URL('../src/', import.meta.url).pathname
const files = readdirSync(root, { recursive: true })
  .filter((file) => file.endsWith('.ts'))
  .map((file) => join(root, file))

const importsOf = (file) =>
  [...readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.[^']+)'/gms)]
    .map((match) => join(dirname(file), match[1].replace(/\.js$/, '.ts')))
    .filter((target) => existsSync(target))
const graph = new Map(files.map((file) => [file, importsOf(file)]))
const name = (file) => relative(root, file)
/** The surface's entries (index.ts, schemas.ts) sit with api.ts. */
const SURFACE = ['index.ts', 'schemas.ts']
const layer = (file) => LAYERS.indexOf(SURFACE.includes(name(file)) ? 'api.ts' : name(file).split('/')[0])

const problems = []
for (const file of files) {
  if (layer(file) < 0) problems.push(`${name(file)} belongs to no layer: put it in one of ${LAYERS.join(', ')}`)
}
for (const [file, targets] of graph) {
  for (const target of targets) {
    if (layer(target) > layer(file))
      problems.push(`${name(file)} imports ${name(target)}: a lower layer may not import a higher one`)
  }
}

const state = new Map()
const path = []
function visit(file) {
  state.set(file, 'open')
  path.push(file)
  for (const target of graph.get(file)) {
    if (state.get(target) === 'open')
      problems.push(`import cycle: ${[...path.slice(path.indexOf(target)), target].map(name).join(' -> ')}`)
    else if (!state.has(target)) visit(target)
  }
  path.pop()
  state.set(file, 'done')
}
for (const file of files) if (!state.has(file)) visit(file)

if (problems.length > 0) {
  console.error(problems.join('\n'))
  process.exit(1)
}
console.log(`imports: ${files.length} files, no cycles, layers ${LAYERS.join(' -> ')}`)
