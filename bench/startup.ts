import { COMMANDS } from '../src/cli/command-index.js'
import { median, run } from './common.js'

/** A bench row: what was measured, its value and its target. */
export interface StartupRow {
  measure: string
  value: string
  target: string
}

/**
 * The built CLI's start-up as whole processes, over `node -e 0`'s, each the median of `rounds`
 * runs taken in turns with node's own: `--version`, `--help`, and each of `commands`' `--help` (the
 * command loaded, its flags built from its schema, before any connection or file).
 */
export async function startupRows(rounds: number, commands = Object.keys(COMMANDS)): Promise<StartupRow[]> {
  const cli = new URL('../dist/cli.js', import.meta.url).pathname
  const ms = async (args: string[]) => {
    const start = performance.now()
    await run(process.execPath, args)
    return performance.now() - start
  }
  const cases: Array<[string, string[]]> = [
    ['--version', ['--version']],
    ['--help', ['--help']],
    ...commands.map((name): [string, string[]] => [`${name} --help`, [name, '--help']]),
  ]
  const rows: StartupRow[] = []
  for (const [label, args] of cases) {
    const node: number[] = []
    const walcost: number[] = []
    for (let round = 0; round < rounds; round++) {
      node.push(await ms(['-e', '0']))
      walcost.push(await ms([cli, ...args]))
    }
    const over = median(walcost) - median(node)
    rows.push({
      measure: `walcost ${label}: ms over node -e 0 (${median(node).toFixed(0)} ms), Node ${process.versions.node}`,
      value: `${over.toFixed(0)} ms`,
      target: label.startsWith('--') ? '<= 50 ms' : '<= 100 ms',
    })
  }
  return rows
}
