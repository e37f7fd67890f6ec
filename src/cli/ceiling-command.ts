import { WalcostError } from '../core/errors.js'
import { calibrateIngest } from '../model/calibrate-ingest.js'
import { ceilingOptionsSchema, estimateIngestCeiling, STORAGE_PRESETS } from '../model/ceiling.js'
import { command, connection, connectionUrl, costInput, html, json, option, plain, vega } from './command.js'

export default command({
  schema: ceilingOptionsSchema,
  skip: ['storage'],
  extra: [
    json,
    vega,
    html,
    option(
      'storage',
      `--storage ${Object.keys(STORAGE_PRESETS).join('|')}|JSON\n      a preset, or the storage as JSON: '{"writeMBps":500,"iops":20000,"fsyncMs":0.5}' (default gp3)`,
    ),
    option('bytes-per-row', '--bytes-per-row N\n      WAL bytes per row'),
    option(
      'ms-per-row',
      "--ms-per-row MS\n      with --bytes-per-row: the server's time a row (a measurement's timing.msPerRow), for the server CPU limit",
    ),
    option('from', '--from FILE\n      a measurement or prediction saved with --json'),
    option(
      'calibrate',
      '--calibrate\n      instead: a short real ingest on a scratch copy of --table at --url (committed on the copy, dropped afterwards): the flush time and bandwidth, server time a row and a commit, how commits group, and how far the estimate was from each run',
      'boolean',
    ),
    connection,
    option('table', '--table NAME\n      with --calibrate: the table to copy and ingest into'),
  ],
  async prepare(input, values) {
    const storage = values.storage
    if (typeof storage !== 'string') return input
    if (!storage.trim().startsWith('{')) return { ...input, storage }
    try {
      return { ...input, storage: JSON.parse(storage) }
    } catch (error) {
      throw new WalcostError('INVALID_OPTIONS', `--storage: not a preset and not JSON (${(error as Error).message}).`, {
        field: 'storage',
        cause: error,
      })
    }
  },
  async run(options, values) {
    if (values.calibrate) {
      if (typeof values.table !== 'string')
        throw new WalcostError('INVALID_OPTIONS', 'table: --calibrate needs --table NAME.', { field: 'table' })
      const db = connectionUrl(typeof values.url === 'string' ? values.url : undefined)
      return plain(
        await calibrateIngest({
          ...(db === undefined ? {} : { db }),
          table: values.table,
          ...(options.cores === undefined ? {} : { cores: options.cores }),
          ...(typeof values.storage === 'string' ? { storage: options.storage } : {}),
        }),
      )
    }
    const cost = await costInput(values)
    return plain(estimateIngestCeiling(cost, options))
  },
})
