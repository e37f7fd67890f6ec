import { spawn } from 'node:child_process'
import { WalcostError } from '../core/errors.js'

/** A command to run and wait for, as a function; `exitCode` is its exit status once it has ended. */
export interface CommandRun {
  (): Promise<void>
  readonly exitCode: number | null
}

/**
 * Runs `argv` (no shell) with walcost's stdin and stderr; its standard output goes to walcost's
 * standard error, so that walcost's own output (the result, or its JSON) stays alone on stdout.
 * A command killed by a signal counts as exit status 1.
 */
export function commandRun(argv: readonly string[]): CommandRun {
  let exitCode: number | null = null
  const [file, ...args] = argv
  const run = () =>
    new Promise<void>((resolve, reject) => {
      if (file === undefined) {
        reject(new WalcostError('INVALID_OPTIONS', 'give the command to run after --.', { field: 'command' }))
        return
      }
      const child = spawn(file, args, { stdio: ['inherit', 2, 'inherit'] })
      child.once('error', (error) => {
        reject(
          new WalcostError(
            'RUN_FAILED',
            `could not start ${file} (${error.message}). Check the command after --: its name or path, and that it is installed.`,
            { cause: error },
          ),
        )
      })
      child.once('exit', (code) => {
        exitCode = code ?? 1
        resolve()
      })
    })
  return Object.defineProperty(run, 'exitCode', { get: () => exitCode }) as CommandRun
}
