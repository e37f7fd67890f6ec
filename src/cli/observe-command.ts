import { constants as osConstants } from 'node:os'
import { WalcostError } from '../core/errors.js'
import { formatResult } from '../report/text.js'
import { observeOptionsSchema, observeWal } from '../traffic/observe.js'
import { command, connection, html, json, option, vega } from './command.js'
import { millisecondsFlag } from './command-line.js'
import { type CommandRun, commandRun } from './run-command.js'

/** The signals that end walcost observe's window early, as Ctrl-C and a service manager send them. */
const STOPPING_SIGNALS = ['SIGINT', 'SIGTERM'] as const

export default command({
  schema: observeOptionsSchema,
  skip: ['db', 'signal', 'stop', 'run', 'durationMs'],
  extra: [
    connection,
    json,
    vega,
    html,
    option('seconds', '--seconds N\n      observe for N seconds (instead of a command after --)'),
  ],
  trailing: '-- COMMAND ARGS...\n      observe while walcost runs COMMAND and waits for it (its output goes to stderr)',
  async prepare(input, values, trailing) {
    const seconds = values.seconds
    if (typeof seconds === 'string' && trailing.length > 0) {
      throw new WalcostError('INVALID_OPTIONS', 'give --seconds N or a command after --, not both.', {
        field: 'seconds',
      })
    }
    const durationMs = millisecondsFlag(values, 'seconds')
    if (durationMs !== undefined) return { ...input, durationMs }
    if (trailing.length === 0) {
      throw new WalcostError(
        'INVALID_OPTIONS',
        'give the window: --seconds N, or the command to observe after --, e.g. walcost observe --url URL -- pgbench -c 4 -T 10 URL.',
        { field: 'seconds' },
      )
    }
    return { ...input, run: commandRun(trailing) }
  },
  async run(options) {
    const command = options.run as CommandRun | undefined
    // SIGINT or SIGTERM ends the window where it is, passed on to the command, whose end closes
    // it: the observation so far is printed, marked partial. A second signal quits at once.
    const stop = new AbortController()
    let stoppedBy: NodeJS.Signals | null = null
    const onSignal = (signal: NodeJS.Signals) => {
      stoppedBy = signal
      process.stderr.write(
        `walcost observe: ${signal}: ending the window${command ? ' once the command has ended' : ''}; a second ${signal} quits at once.\n`,
      )
      for (const name of STOPPING_SIGNALS) {
        process.removeListener(name, onSignal)
        process.once(name, () => process.exit(128 + osConstants.signals[name]))
      }
      stop.abort()
      command?.kill(signal)
    }
    for (const name of STOPPING_SIGNALS) process.once(name, onSignal)
    let observation: Awaited<ReturnType<typeof observeWal>>
    try {
      observation = await observeWal({ ...options, stop: stop.signal })
    } finally {
      for (const name of STOPPING_SIGNALS) process.removeListener(name, onSignal)
    }
    const signalled = stoppedBy as NodeJS.Signals | null
    const exitCode = command ? (command.exitCode ?? 0) : signalled ? 128 + osConstants.signals[signalled] : 0
    const ended = signalled
      ? `Interrupted by ${signalled}: the window ended early, after ${(observation.window.durationMs / 1000).toFixed(1)} s; what it saw until then:\n\n`
      : ''
    const text = `${ended}${formatResult(observation)}`
    return {
      json: observation,
      result: observation,
      text: command && exitCode !== 0 ? `${text}\n\nThe command exited with status ${exitCode}.` : text,
      exitCode,
    }
  },
})
