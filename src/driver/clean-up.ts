import { isConnectionError } from '../core/errors.js'

/** How a clean-up step went: its first failure (null: none), and whether it was done in the end. */
export interface CleanUp {
  failure: unknown
  done: boolean
}

/**
 * Runs a clean-up step (a rollback, a slot dropped, a caller's settings put back), once more if it
 * failed: a cancel strikes one statement, and what a clean-up leaves undone stays on a connection
 * that goes back to its caller. A lost connection is not tried again. `nothingLeft` tells a failure
 * that leaves nothing to do (a slot the server has dropped already).
 */
export async function cleanUp(
  step: () => Promise<unknown>,
  nothingLeft: (error: unknown) => boolean = () => false,
): Promise<CleanUp> {
  let failure: unknown = null
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await step()
      return { failure, done: true }
    } catch (error) {
      if (nothingLeft(error)) return { failure, done: true }
      failure ??= error
      if (isConnectionError(error)) break
    }
  }
  return { failure, done: false }
}
