// Fails on any import cycle in src/, and on any import against the direction of the layers:
// driver -> wal -> measure -> model -> report (a layer imports only those before it).
// Top-level files (errors, options, api, cli, ...) sit around the layers and are checked for cycles.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'

const LAYERS = ['driver', 'wal', 'measure', 'model', 'report', 'testing']
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
const layer = (file) => LAYERS.indexOf(name(file).split('/')[0])

const problems = []
for (const [file, targets] of graph) {
  for (const target of targets) {
    if (layer(file) >= 0 && layer(target) > layer(file))
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
