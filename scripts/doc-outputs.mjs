// The outputs quoted in README.md and docs/ come from runs of the code as it is. Two kinds of block:
// - a fenced block whose first line is `$ npx walcost ...`: the command's output follows it;
// - a fenced block right after `<!-- output of: COMMAND -->`: COMMAND's output (a node script).
// `node scripts/doc-outputs.mjs` runs each command with the built CLI and writes the outputs in;
// with --check it says which are stale and exits 1 (test/integration/docs.test.ts runs it so).
// What changes from run to run on the same code (LSNs, timestamps) is not compared.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

const root = new URL('..', import.meta.url).pathname
const documents = ['README.md', 'docs/api.md', 'docs/cli.md', 'docs/how-it-works.md']
const check = process.argv.includes('--check')

/** Splits a command line as a POSIX shell would for the quoting the docs use ('...' and "..."). */
function words(line) {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3])
}

function run(command) {
  const [program, ...args] = words(command)
  const argv =
    program === 'npx' && args[0] === 'walcost'
      ? [`${root}dist/cli.js`, ...args.slice(1)]
      : program === 'node'
        ? args
        : null
  if (!argv) throw new Error(`doc-outputs: cannot run ${command}`)
  return execFileSync(process.execPath, argv, {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
  }).trimEnd()
}

const volatile = (text) =>
  text
    .replace(/\b[0-9A-F]{1,8}\/[0-9A-F]{1,8}\b/g, 'LSN')
    .replace(/\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?(\+\d\d(:\d\d)?|Z)?/g, 'TIME')
    .replace(/counted \d+ timed checkpoints and \d+ requested ones/g, 'counted N checkpoints')

const stale = []
for (const document of documents) {
  const path = `${root}${document}`
  const text = readFileSync(path, 'utf8')
  const updated = text
    .replace(/```\n(\$ npx walcost [\s\S]*?)```/g, (_block, body) => {
      // One or more commands a block, each followed by its output.
      const runs = body.split(/^(?=\$ )/m).map((part) => {
        const [first, ...shown] = part.trimEnd().split('\n')
        const command = first.slice(2)
        const output = run(command)
        if (volatile(output) !== volatile(shown.join('\n'))) stale.push(`${document}: ${command}`)
        return `$ ${command}\n${output}`
      })
      return `\`\`\`\n${runs.join('\n\n')}\n\`\`\``
    })
    .replace(/<!-- output of: ([^>]*) -->\n\n```\n([\s\S]*?)```/g, (block, command, shown) => {
      const output = run(command.trim())
      if (volatile(output) === volatile(shown.trimEnd())) return block
      stale.push(`${document}: ${command.trim()}`)
      return `<!-- output of: ${command.trim()} -->\n\n\`\`\`\n${output}\n\`\`\``
    })
  if (!check && updated !== text) writeFileSync(path, updated)
}
if (stale.length > 0) {
  console.error(
    `${check ? 'stale' : 'updated'}: ${stale.join('; ')}${check ? '. Run node scripts/doc-outputs.mjs' : ''}`,
  )
  if (check) process.exit(1)
}
