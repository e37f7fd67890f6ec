import { createRequire } from 'node:module'
import { COMMANDS, type CommandEntry } from './command-index.js'

// The command line's entry: it answers --help and --version itself, and loads the one command it
// runs (command-index.ts), so that it starts as fast as Node does.

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length)) + 2
  return [
    'walcost: what PostgreSQL inserts really write to WAL',
    '',
    `usage: walcost <${Object.keys(COMMANDS).join('|')}> [options]`,
    '       walcost <command> --help',
    '       walcost --version',
    '',
    ...Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(width)}${command.summary}`),
  ].join('\n')
}

/** The package's version, from the package.json beside dist/ (or beside src/, run from source). */
function version(): string {
  const require = createRequire(import.meta.url)
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const manifest = require(path) as { name?: string; version: string }
      if (manifest.name === 'walcost') return manifest.version
    } catch {
      // Not there: the next one up.
    }
  }
  return 'unknown'
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === '--version' || name === '-v') {
    console.log(version())
    return 0
  }
  if (name === undefined || name === '-h' || name === '--help') {
    console.log(usage())
    return name === undefined ? 2 : 0
  }
  if (name === 'help') {
    const about = rest[0] === undefined ? undefined : known(rest[0])
    if (!about || !rest[0]) {
      console.log(usage())
      return 0
    }
    const [{ commandHelp }, { default: command }] = await Promise.all([import('./main.js'), about.load()])
    console.log(commandHelp(rest[0], about.summary, command))
    return 0
  }
  const entry = known(name)
  if (!entry) {
    console.error(
      `walcost: unknown command ${name}; the commands are ${Object.keys(COMMANDS).join(', ')} (walcost --help).`,
    )
    return 2
  }
  const [{ runCommand }, { default: command }] = await Promise.all([import('./main.js'), entry.load()])
  return runCommand(name, entry.summary, command, rest)
}

/** A command by its name: one of walcost's own, not a property every object has. */
const known = (name: string): CommandEntry | undefined => (Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined)

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error(`walcost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
    process.exitCode = 2
  },
)
