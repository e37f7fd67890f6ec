import { createReadStream } from 'node:fs'
import { access } from 'node:fs/promises'
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
  try {
    await access(path)
  } catch (error) {
    throw new WalcostError('INVALID_OPTIONS', `rows: cannot read ${path} (${(error as Error).message}).`, {
      field: 'rows',
      cause: error,
    })
  }
  return kind === '.csv' ? () => csvRows(path) : () => jsonLines(path)
}

async function* jsonLines(path: string): AsyncGenerator<Row> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity })
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
}

function csvRows(path: string): AsyncIterable<Row> {
  return createReadStream(path).pipe(
    parse({
      columns: true,
      cast: (value, context) => (value === '' && !context.quoting ? null : value),
    }),
  )
}
