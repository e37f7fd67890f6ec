import { WalcostError } from '../core/errors.js'
import { formatResult } from '../report/text.js'
import { inspectOptionsSchema, inspectWal } from '../traffic/inspect.js'

import { command, html, json, option, progressLine, vega } from './command.js'

export default command({
  schema: inspectOptionsSchema,
  skip: ['db', 'signal', 'files', 'dir', 'onProgress'],
  extra: [
    option(
      'url',
      "--url URL\n      a server whose catalog names the relfilenodes, each database's (default: DATABASE_URL, else the PG* variables; none: relations by database and relfilenode)",
    ),
    json,
    vega,
    html,
  ],
  positionals:
    'DIR|FILE...\n      WAL segment files and folders of them, in any order; history files for a timeline switch',
  async prepare(input, _values, files) {
    if (files.length === 0)
      throw new WalcostError(
        'INVALID_OPTIONS',
        'give the WAL to read: a folder of segments or segment files, e.g. walcost inspect /var/lib/postgresql/wal-archive.',
        { field: 'files' },
      )
    return { ...input, files, ...(process.stderr.isTTY ? { onProgress: progressLine() } : {}) }
  },
  async run(options) {
    const observation = await inspectWal(options)
    if (process.stderr.isTTY) process.stderr.write('\n')
    return { json: observation, result: observation, text: formatResult(observation), exitCode: 0 }
  },
})
