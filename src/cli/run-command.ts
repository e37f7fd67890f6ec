import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import { WalcostError } from '../core/errors.js'

/** A command to run and wait for, as a function; `exitCode` is its exit status once it has ended. */
export interface CommandRun {
  (): Promise<void>
  readonly exitCode: number | null
  /** Passes a signal on to the command while it runs (walcost observe's own SIGINT or SIGTERM). */
  kill(signal: NodeJS.Signals): void
}

/**
 * Runs `argv` (no shell) with walcost's stdin and stderr; its standard output goes to walcost's
 * standard error, so that walcost's own output (the result, or its JSON) stays alone on stdout.
 * A command killed by a signal has the exit status a shell gives it: 128 and the signal's number.
 */
export function commandRun(argv: readonly string[]): CommandRun {
  let exitCode: number | null = null
  let child: ReturnType<typeof spawn> | null = null
  const [file, ...args] = argv
  const run = () =>
    new Promise<void>((resolve, reject) => {
      if (file === undefined) {
        reject(new WalcostError('INVALID_OPTIONS', 'give the command to run after --.', { field: 'command' }))
        return
      }
      child = spawn(file, args, { stdio: ['inherit', 2, 'inherit'] })
      child.once('error', (error) => {
        reject(
          new WalcostError(
            'RUN_FAILED',
            `could not start ${file} (${error.message}). Check the command after --: its name or path, and that it is installed.`,
            { cause: error },
          ),
        )
      })
      child.once('exit', (code, signal) => {
        exitCode = code ?? 128 + (signal ? constants.signals[signal] : 0)
        child = null
        resolve()
      })
    })
  return Object.defineProperties(run, {
    exitCode: { get: () => exitCode },
    kill: { value: (signal: NodeJS.Signals) => child?.kill(signal) },
  }) as CommandRun
}
