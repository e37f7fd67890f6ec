import type { WalObservation } from '../src/index.js'
import { median, quick, ratio, results, rows } from './common.js'
import { liveHeapOf, liveHeapRow, partOf, pgbenchLoad, residentMB, tenthsMB, tracedCli } from './live.js'

/**
 * `walcost top` itself over a long watch of a server under pgbench (10 minutes; 8 s with --quick):
 * the CLI's RSS sampled from /proc each second, its lows early against late, and over the run; and
 * whether its reading kept up (each interval printed one interval after the one before, not later
 * and later). Flat means a tally per interval, nothing kept per interval.
 */
export async function watch(url: string) {
  const seconds = quick ? 8 : 600
  const load = await pgbenchLoad(url, 'watch', seconds + 6)
  if (!load) return
  await new Promise((resolve) => setTimeout(resolve, 1_000))
  const top = tracedCli(['top', '--url', url, '--json', '--interval', '1', '--seconds', String(seconds)])
  const began = performance.now()
  const rss: Array<{ atS: number; rssMB: number }> = []
  const printedAtS: number[] = []
  let walBytes = 0
  let stderr = ''
  const liveHeap = liveHeapOf(top.stdout, began, (line, atS) => {
    if (!line.startsWith('{')) return
    walBytes += (JSON.parse(line) as WalObservation).window.bytes
    printedAtS.push(atS)
  })
  top.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => top.once('close', resolve))
  const sampler = setInterval(() => {
    void residentMB(top.pid ?? 0).then(
      (mb) => mb !== null && rss.push({ atS: (performance.now() - began) / 1000, rssMB: mb }),
    )
  }, 1_000)
  const code = await exited
  clearInterval(sampler)
  await load.finished.catch(() => undefined)
  if (code !== 0) throw new Error(`walcost top exited with ${code}: ${stderr}`)
  if (rss.length < 4) {
    rows.push({ section: 'watch', measure: "walcost top's RSS", value: 'unavailable (no /proc)', target: '-' })
    return
  }
  // RSS saws with V8's collections and keeps what V8 has not given back; the live heap after each
  // full collection is what is held. The first quarter loads modules and warms the JIT: the second
  // is compared with the last. Tenths and quarters are of the run's time.
  const heapOf = (i: number) => partOf(liveHeap, seconds, 4, i).map((sample) => sample.heapMB)
  const [early, late] = [median(heapOf(1)), median(heapOf(3))]
  const walMB = walBytes / 1e6
  const watchedS = printedAtS.length
  // How much later than one interval after the first the last interval was printed.
  const fellBehindS = (printedAtS.at(-1) ?? 0) - (printedAtS[0] ?? 0) - (printedAtS.length - 1)
  results.watch = {
    seconds,
    intervals: watchedS,
    walMB,
    earlyHeapMB: early,
    lateHeapMB: late,
    fellBehindS,
    rss,
    liveHeap,
  }
  const over = `${seconds} s of 1 s intervals under pgbench -c 4 (synchronous_commit off), ${walMB.toFixed(0)} MB of WAL (${(walMB / seconds).toFixed(1)} MB/s)`
  const rssOf = (sample: (typeof rss)[number]) => sample.rssMB
  rows.push(
    {
      section: 'watch',
      measure: `walcost top's live heap after each full collection, the last quarter's median / the second quarter's, ${over}`,
      value: Number.isNaN(early) || Number.isNaN(late) ? 'no full collection in a quarter' : ratio(late / early),
      target: quick ? '-' : '~1 (flat)',
    },
    liveHeapRow('watch', 'walcost top', liveHeap, seconds),
    {
      section: 'watch',
      measure: "walcost top's RSS over the run, each tenth's lowest (MB)",
      value: tenthsMB(rss, seconds, rssOf, (values) => Math.min(...values)),
      target: '-',
    },
    {
      section: 'watch',
      measure: "walcost top's RSS over the run, each tenth's highest (MB)",
      value: tenthsMB(rss, seconds, rssOf, (values) => Math.max(...values)),
      target: '-',
    },
    {
      section: 'watch',
      measure: `walcost top: intervals printed; how much later the last came than one a second after the first`,
      value: `${watchedS} of ${seconds}; ${fellBehindS.toFixed(1)} s`,
      target: quick ? '-' : `${seconds}; ~0 s (kept up)`,
    },
  )
}
