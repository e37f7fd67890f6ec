import { DEFAULT_EXPORTER_INTERVAL_MS } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import type { WalMetricsOptions } from '../traffic/exporter.js'
import { serveWalMetrics, walMetricsOptionsSchema } from '../traffic/exporter.js'
import { command, connection, option, repeated } from './command.js'
import { millisecondsFlag } from './command-line.js'

/** --interval S as intervalMs, and each --label NAME=VALUE as a constant label. */
export function exporterInput(
  input: Record<string, unknown>,
  values: Record<string, unknown>,
): Record<string, unknown> {
  const intervalMs = millisecondsFlag(values, 'interval')
  const given = Array.isArray(values.label) ? (values.label as string[]) : []
  const labels: Record<string, string> = {}
  for (const entry of given) {
    const at = entry.indexOf('=')
    if (at < 1)
      throw new WalcostError('INVALID_OPTIONS', `--label: expected NAME=VALUE, got ${entry}.`, { field: 'label' })
    const name = entry.slice(0, at)
    if (name in labels)
      throw new WalcostError('INVALID_OPTIONS', `--label: ${name} is given twice: give each label once.`, {
        field: 'label',
      })
    labels[name] = entry.slice(at + 1)
  }
  return { ...input, ...(intervalMs !== undefined && { intervalMs }), ...(given.length > 0 && { labels }) }
}

/**
 * Serves the metrics until SIGINT or SIGTERM, which close the exporter as close() does: the
 * interval under way read, the sessions (and their temporary slot) closed, the HTTP server closed.
 * Each failure it outlives is one line on stderr.
 */
export async function runExporter(options: WalMetricsOptions): Promise<void> {
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    const exporter = await serveWalMetrics({
      ...options,
      signal: stop.signal,
      onError: (error, retryInMs) => {
        const code = error instanceof WalcostError ? `${error.code}: ` : ''
        process.stderr.write(
          `walcost exporter: ${code}${error.message} Connecting again in ${retryInMs / 1000} s; walcost_up is 0 meanwhile.\n`,
        )
      },
    })
    process.stderr.write(`walcost exporter: serving ${exporter.url}\n`)
    const error = await exporter.ended
    if (error) throw error
  } finally {
    process.removeListener('SIGINT', onSignal)
    process.removeListener('SIGTERM', onSignal)
  }
}

export default command({
  schema: walMetricsOptionsSchema,
  skip: ['db', 'signal', 'intervalMs', 'labels', 'onError'],
  extra: [
    connection,
    option(
      'interval',
      `--interval S\n      seconds between two reads of the WAL (default: ${DEFAULT_EXPORTER_INTERVAL_MS / 1000})`,
    ),
    repeated(
      'label',
      '--label NAME=VALUE\n      a constant label on every series (e.g. --label server=db1); repeat for more',
    ),
  ],
  prepare: async (input, values) => exporterInput(input, values),
  async run(options) {
    await runExporter(options)
    return { json: undefined, text: undefined, exitCode: 0 }
  },
})
