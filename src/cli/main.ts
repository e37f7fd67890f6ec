import { writeFile } from 'node:fs/promises'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { WalcostError } from '../core/errors.js'
import { parseOptions } from '../core/options.js'
import { toHtmlReport } from '../report/html-report.js'
import { toVegaLite } from '../report/render.js'
import { budgetFlags, type Command, connectionUrl, type Values } from './command.js'
import {
  argumentProblem,
  flagFor,
  flagsFromSchema,
  inFlagWords,
  inputFromFlags,
  joinNegativeValues,
  parseArgsOptions,
  repeatedFlag,
} from './command-line.js'

// The run of one command, once the dispatcher (cli.ts) has loaded it.

/** Fields inside the library's nested options, as the flags that set them. */
const NESTED_FLAGS: Record<string, string> = {
  'update.set': 'set',
  'update.rows': 'update-rows',
  'update.pick': 'pick',
  'delete.rows': 'delete-rows',
  'delete.pick': 'pick',
  'upsert.rows': 'upsert-rows',
  'upsert.conflict': 'conflict',
  'upsert.action': 'on-conflict',
  'upsert.set': 'set',
  'upsert.pick': 'pick',
}

/** A connection string fit to print: the password is never shown. */
function withoutPassword(url: string): string {
  return url.replace(/^(\w+:\/\/[^:@/]*):[^@/]*@/, '$1:***@').replace(/([?&]password=)[^&]*/, '$1***')
}

const flagsOf = (command: Command) => flagsFromSchema(command.schema, command.skip)

/** A command's --help: its usage line, its summary and every flag, from its schema and its own flags. */
export function commandHelp(name: string, summary: string, command: Command): string {
  const negatable = flagsOf(command).filter((flag) => flag.kind === 'boolean')
  return [
    `usage: walcost ${name}${command.positionals ? ` ${command.positionals.split('\n')[0]}` : ''} [options]${command.trailing ? ` [${command.trailing.split('\n')[0]}]` : ''}`,
    '',
    summary,
    '',
    ...command.extra.map(([, , help]) => `  ${help}`),
    ...flagsOf(command).map((flag) => `  ${flag.help}`),
    ...(negatable.length > 0 ? [`  --no-${negatable[0]?.flag} (and so on)\n      turn a yes/no option off`] : []),
    ...(command.trailing ? [`  ${command.trailing}`] : []),
    ...(command.positionals ? [`  ${command.positionals}`] : []),
    '  -h, --help',
  ].join('\n')
}

/** `--flag=true|false` for a yes/no option, as `--flag` or `--no-flag`: parseArgs takes no value for booleans. */
function normaliseBooleans(args: string[], booleans: Set<string>): string[] {
  return args.map((arg) => {
    const match = /^--([^=]+)=(true|false|yes|no|on|off|1|0)$/i.exec(arg)
    if (!match?.[1] || !match[2] || !booleans.has(match[1])) return arg
    return /^(true|yes|on|1)$/i.test(match[2]) ? `--${match[1]}` : `--no-${match[1]}`
  })
}

/**
 * Runs command `name` with the words after it: its flags checked against its schema, its options
 * against the library's, its result printed (or its JSON, chart or report written).
 */
export async function runCommand(name: string, summary: string, command: Command, rest: string[]): Promise<number> {
  const flags = flagsOf(command)
  const booleans = flags.filter((flag) => flag.kind === 'boolean').map((flag) => flag.flag)
  const options: ParseArgsConfig['options'] = {
    ...parseArgsOptions(flags),
    ...Object.fromEntries(booleans.map((flag) => [`no-${flag}`, { type: 'boolean' as const }])),
    ...Object.fromEntries(command.extra.map(([flag, config]) => [flag, config])),
    help: { type: 'boolean', short: 'h' },
  }
  // After `--`, the words are the command to run, not walcost's flags.
  const dashes = command.trailing ? rest.indexOf('--') : -1
  let trailing = dashes >= 0 ? rest.slice(dashes + 1) : []
  let values: Values
  const args = joinNegativeValues(
    normaliseBooleans(dashes >= 0 ? rest.slice(0, dashes) : rest, new Set(booleans)),
    new Set(Object.keys(options).filter((flag) => options[flag]?.type === 'string')),
  )
  const refuse = (problem: string) => {
    console.error(`walcost ${name}: ${problem}${/[.?]$/.test(problem) ? '' : '.'} See walcost ${name} --help.`)
    return 2
  }
  try {
    const parsed = parseArgs({ args, options, strict: true, allowPositionals: !!command.positionals, tokens: true })
    const repeated = repeatedFlag(parsed.tokens, options)
    if (repeated) return refuse(repeated)
    values = parsed.values as Values
    if (command.positionals) trailing = parsed.positionals
  } catch (error) {
    return refuse(argumentProblem(error as Error, Object.keys(options), args))
  }
  if (values.help) {
    console.log(commandHelp(name, summary, command))
    return 0
  }
  for (const flag of booleans) if (values[`no-${flag}`]) values[flag] = false
  const url = connectionUrl(typeof values.url === 'string' ? values.url : undefined)
  if (process.stderr.isTTY && name !== 'ceiling' && name !== 'inspect') {
    process.stderr.write(`walcost ${name}: on ${url ? withoutPassword(url) : 'an embedded PGlite'}...\n`)
  }
  const fieldFlags = [...flags, ...budgetFlags]
  try {
    const input = { ...inputFromFlags(flags, values), ...(url && name !== 'ceiling' ? { db: url } : {}) }
    const options = parseOptions(
      command.schema,
      command.prepare ? await command.prepare(input, values, trailing) : input,
    )
    const outcome = await command.run(options, values)
    const printed = values.json ? outcome.json : outcome.text
    if (printed !== undefined) console.log(values.json ? JSON.stringify(printed, null, 2) : printed)
    const drawn = outcome.result
    if (drawn && typeof values.vega === 'string') {
      await writeOutput('vega', values.vega, JSON.stringify(toVegaLite(drawn), null, 2))
    }
    if (drawn && typeof values.html === 'string') await writeOutput('html', values.html, toHtmlReport(drawn))
    return outcome.exitCode
  } catch (error) {
    if (!(error instanceof WalcostError)) throw error
    const extraFlag = command.extra.find(([option]) => option === error.field)?.[0] ?? NESTED_FLAGS[error.field ?? '']
    const flag = flagFor(fieldFlags, error.field) ?? (error.field === 'db' ? '--url' : extraFlag && `--${extraFlag}`)
    const message = inFlagWords(
      flag && error.code === 'INVALID_OPTIONS' && error.field
        ? error.message.replace(new RegExp(`^${error.field}\\b`), flag)
        : error.message,
      fieldFlags,
    )
    console.error(`walcost ${name}: ${error.code}: ${url ? message.replaceAll(url, withoutPassword(url)) : message}`)
    return 2
  }
}

async function writeOutput(option: string, path: string, content: string): Promise<void> {
  try {
    await writeFile(path, content)
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `--${option}: cannot write ${path} (${(error as Error).message}).`, {
      field: option,
      cause: error,
    })
  }
}
