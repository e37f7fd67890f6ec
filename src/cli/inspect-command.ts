import { WalcostError } from '../core/errors.js'
import { size } from '../core/format.js'
import { formatResult } from '../report/text.js'
import { inspectOptionsSchema, inspectWal } from '../traffic/inspect.js'
import type { ArchiveProgress } from '../wal/read-archive.js'
import { command, html, json, option, vega } from './command.js'

/** A long reading's progress on the terminal, in place: files and bytes done, and the rate. */
function progressLine(): (progress: ArchiveProgress) => void {
  const began = performance.now()
  return ({ files, filesDone, bytesDone }) => {
    const seconds = Math.max(performance.now() - began, 1) / 1000
    process.stderr.write(
      `\rwalcost inspect: ${filesDone} of ${files} files, ${size(bytesDone)} read, ${size(bytesDone / seconds)}/s `,
    )
  }
}

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
