// Executes examples/field-notes.ipynb in a real Deno Jupyter kernel (Deno from npm, nbconvert from
// Debian's jupyter-nbconvert) and checks that every result rendered as a table and a chart.
// `node scripts/run-notebook.mjs --update` writes the executed notebook back, outputs included, so
// that a reader sees them on GitHub. The kernelspec lives in a temporary folder, not the user's.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = new URL('..', import.meta.url).pathname
const notebook = join(root, 'examples/field-notes.ipynb')
const jupyter = mkdtempSync(join(tmpdir(), 'walcost-jupyter-'))
try {
  mkdirSync(join(jupyter, 'kernels/deno'), { recursive: true })
  const deno = join(root, 'node_modules/.bin/deno')
  writeFileSync(
    join(jupyter, 'kernels/deno/kernel.json'),
    JSON.stringify({
      argv: [deno, 'jupyter', '--kernel', '--conn', '{connection_file}'],
      display_name: 'Deno',
      language: 'typescript',
    }),
  )
  const executed = join(jupyter, 'executed.ipynb')
  execFileSync(
    'jupyter-nbconvert',
    [
      '--to',
      'notebook',
      '--execute',
      '--ExecutePreprocessor.timeout=900',
      '--ExecutePreprocessor.kernel_name=deno',
      '--output',
      executed,
      notebook,
    ],
    { stdio: 'inherit', env: { ...process.env, JUPYTER_PATH: jupyter, JUPYTER_DATA_DIR: jupyter, NO_COLOR: '1' } },
  )
  const result = JSON.parse(readFileSync(executed, 'utf8'))
  const outputs = result.cells.filter((cell) => cell.cell_type === 'code').map((cell) => cell.outputs)
  const problems = []
  for (const [i, cellOutputs] of outputs.entries()) {
    if (cellOutputs.some((output) => output.output_type === 'error')) problems.push(`cell ${i + 1} failed`)
  }
  const charts = outputs
    .flat()
    .filter((output) => output.data?.['application/vnd.vegalite.v5+json'] && output.data?.['text/html'])
  // The measurement, the prediction and two ceilings render as a table and a chart each, as cell results.
  if (charts.length !== 4) problems.push(`expected 4 results with a table and a chart, found ${charts.length}`)
  if (problems.length > 0) {
    console.error(`examples/field-notes.ipynb: ${problems.join('; ')}`)
    process.exit(1)
  }
  if (process.argv.includes('--update')) {
    for (const cell of result.cells) delete cell.metadata?.execution
    writeFileSync(notebook, `${JSON.stringify(result, null, 1)}\n`)
  }
  console.log(
    `examples/field-notes.ipynb: ${outputs.length} code cells ran; ${charts.length} results rendered as table and chart`,
  )
} finally {
  rmSync(jupyter, { recursive: true, force: true })
}
