// docs/cli.md shows each command's `--help` as the built CLI prints it. `node scripts/cli-help-docs.mjs`
// writes them in; with --check it only says which are stale and exits 1 (test/integration/docs.test.ts
// runs it so, so that the help in the docs cannot go stale).
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

const root = new URL('..', import.meta.url).pathname
const docs = `${root}docs/cli.md`
const cli = `${root}dist/cli.js`
const check = process.argv.includes('--check')

const text = readFileSync(docs, 'utf8')
const stale = []
const updated = text.replace(/`walcost ([a-z-]+) --help`:\n\n```\n([\s\S]*?)```/g, (block, command, shown) => {
  const help = `${execFileSync(process.execPath, [cli, command, '--help'], { encoding: 'utf8' }).trimEnd()}\n`
  if (help === shown) return block
  stale.push(command)
  return `\`walcost ${command} --help\`:\n\n\`\`\`\n${help}\`\`\``
})
if (check) {
  if (stale.length > 0) {
    console.error(`docs/cli.md: the --help of ${stale.join(', ')} is stale; run node scripts/cli-help-docs.mjs`)
    process.exit(1)
  }
} else if (updated !== text) {
  writeFileSync(docs, updated)
  console.log(`docs/cli.md: updated the --help of ${stale.join(', ')}`)
}
