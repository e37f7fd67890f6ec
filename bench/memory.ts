import type pg from 'pg'
import { freshTable, here, quick, ratio, results, rows, run } from './common.js'

/** Peak RSS of a child process streaming `count` rows through COPY on `backend`. */
async function peakRss(backend: 'pg' | 'pglite', count: number, url: string): Promise<number> {
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', `${here}copy-rss.ts`, backend, String(count), url],
    { maxBuffer: 1024 * 1024 },
  )
  return Number(stdout.trim())
}

/** Peak memory of a COPY measurement streaming ten times the rows, on a real server and on PGlite. */
export async function memory(url: string, client: pg.Client) {
  const [small, large] = quick ? [20_000, 200_000] : [100_000, 2_000_000]
  const entries: Record<string, unknown> = {}
  for (const backend of ['pg', 'pglite'] as const) {
    if (backend === 'pg') await freshTable(client, 0)
    const low = await peakRss(backend, small, url)
    if (backend === 'pg') await freshTable(client, 0)
    const high = await peakRss(backend, large, url)
    entries[backend] = {
      smallRows: small,
      largeRows: large,
      smallRssMB: low / 1e6,
      largeRssMB: high / 1e6,
      ratio: high / low,
    }
    rows.push({
      section: 'memory',
      measure: `peak RSS, COPY of ${large.toLocaleString('en-US')} vs ${small.toLocaleString('en-US')} streamed rows (${backend})`,
      value: ratio(high / low),
      target: backend === 'pg' ? '~1 (flat)' : 'PGlite keeps the database and its WAL in this process',
    })
  }
  results.memory = entries
}
