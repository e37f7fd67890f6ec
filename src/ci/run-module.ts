import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { WalcostError } from '../core/errors.js'
import type { BatchRun } from '../core/options.js'

/**
 * The batch of `walcost measure --run FILE` and of a check config's "run": a module (.mjs, .js or
 * .cjs) whose default export is the callback, `export default async (db) => insertOrders(db, rows)`.
 * `field` is the option's name as the user typed it, for the message.
 */
export async function runFromModule(path: string, field: string, base = process.cwd()): Promise<BatchRun> {
  const file = resolve(base, path)
  let module: { default?: unknown }
  try {
    module = (await import(pathToFileURL(file).href)) as { default?: unknown }
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `${field}: cannot load ${path} (${(error as Error).message}).`, {
      field,
      cause: error,
    })
  }
  if (typeof module.default !== 'function') {
    throw new WalcostError(
      'INVALID_OPTIONS',
      `${field}: ${path} has no default export that is a function; write \`export default async (db) => { ... }\` (or module.exports = async (db) => ... in CommonJS), where db is walcost's connection.`,
      { field },
    )
  }
  return module.default as BatchRun
}
