import { createReadStream } from 'node:fs'
import { open } from 'node:fs/promises'
import { extname } from 'node:path'
import { createInterface } from 'node:readline'
import { parse } from 'csv-parse'
import { WalcostError } from '../core/errors.js'
import type { Row, RowSource } from '../core/options.js'

/**
 * Rows streamed from a file: `.jsonl`/`.ndjson` (one JSON object a line) or `.csv` (a header line
 * of column names; an unquoted empty field is NULL, a quoted one an empty string). The result is a
 * function, so the scenarios can read the file again for each run.
 *
 * @example
 * await measureInsertCost({ db: url, table: 'events', rows: await rowsFromFile('events.jsonl'), method: 'copy' })
 */
export async function rowsFromFile(path: string): Promise<() => RowSource> {
  const kind = extname(path).toLowerCase()
  if (!['.jsonl', '.ndjson', '.csv'].includes(kind)) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      `rows: ${path} is neither .csv nor .jsonl; give rows as CSV with a header line or as one JSON object a line.`,
      { field: 'rows' },
    )
  }
  let file: Awaited<ReturnType<typeof open>> | undefined
  try {
    file = await open(path, 'r')
    if (!(await file.stat()).isFile()) throw new Error('a directory or device, not a file')
  } catch (error) {
    throw unreadable(path, error)
  } finally {
    await file?.close()
  }
  return kind === '.csv' ? () => csvRows(path) : () => jsonLines(path)
}

/** Any problem with the file itself, at the start or while it streams: the path, and what the system said. */
const unreadable = (path: string, error: unknown) =>
  new WalcostError('INVALID_OPTIONS', `rows: cannot read ${path} (${(error as Error).message}).`, {
    field: 'rows',
    cause: error,
  })

async function* jsonLines(path: string): AsyncGenerator<Row> {
  const input = createReadStream(path)
  const lines = createInterface({ input, crlfDelay: Infinity })
  // readline does not pass its input's errors on: one ends the lines, and is thrown after them.
  let failure: unknown
  input.on('error', (error) => {
    failure = error
    lines.close()
  })
  let number = 0
  for await (const line of lines) {
    number++
    if (line.trim() === '') continue
    let row: unknown
    try {
      row = JSON.parse(line)
    } catch (error) {
      throw new WalcostError(
        'INVALID_ROWS',
        `${path}:${number}: not JSON (${(error as Error).message}). Nothing was kept.`,
        { field: 'rows', cause: error },
      )
    }
    yield row as Row
  }
  if (failure) throw unreadable(path, failure)
}

function csvRows(path: string): AsyncIterable<Row> {
  const parser = parse({
    columns: true,
    cast: (value, context) => (value === '' && !context.quoting ? null : value),
  })
  const input = createReadStream(path)
  // pipe() does not pass the file's errors on: the parser fails with them.
  input.on('error', (error) => parser.destroy(unreadable(path, error)))
  return input.pipe(parser)
}
