import { freePort } from '../test/support/postgres-server.js'
import { median, quick, results, rows } from './common.js'
import { liveHeapOf, liveHeapRow, partOf, pgbenchLoad, residentMB, tenthsMB, tracedCli } from './live.js'

/**
 * `walcost exporter` kept running under pgbench (30 minutes; 10 s with --quick), scraped as
 * Prometheus would: its RSS early and late (each the median of a tenth of the run), and its CPU
 * a megabyte of WAL read, from its own process_cpu_seconds_total and walcost_wal_read_lsn_bytes
 * between the first scrape and the last.
 */
export async function exporter(url: string) {
  const seconds = quick ? 10 : Number(process.env.BENCH_EXPORTER_SECONDS ?? 1_800)
  const load = await pgbenchLoad(url, 'exporter', seconds + 10)
  if (!load) return
  const port = await freePort()
  const served = tracedCli(['exporter', '--url', url, '--listen', `127.0.0.1:${port}`, '--interval', '1'])
  const liveHeap = liveHeapOf(served.stdout, performance.now())
  let stderr = ''
  served.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => served.once('close', resolve))
  const scrape = async () => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
    const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(text)?.[1])
    return { cpuS: value('process_cpu_seconds_total'), readBytes: value('walcost_wal_read_lsn_bytes') }
  }
  let first: Awaited<ReturnType<typeof scrape>> | null = null
  for (let waited = 0; !first || Number.isNaN(first.readBytes); waited += 500) {
    if (waited > 60_000) throw new Error(`walcost exporter never served its metrics: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
    first = await scrape().catch(() => null)
  }
  const began = performance.now()
  const rss: Array<{ atS: number; rssMB: number }> = []
  const sampler = setInterval(
    () => {
      void residentMB(served.pid ?? 0).then(
        (mb) => mb !== null && rss.push({ atS: (performance.now() - began) / 1000, rssMB: mb }),
      )
    },
    quick ? 500 : 5_000,
  )
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
  clearInterval(sampler)
  const last = await scrape()
  served.kill('SIGTERM')
  const code = await exited
  await load.finished.catch(() => undefined)
  if (code !== 0) throw new Error(`walcost exporter exited with ${code} on SIGTERM: ${stderr}`)
  const tenth = (i: number) => median(partOf(rss, seconds, 10, i).map((sample) => sample.rssMB))
  const [early, late] = [tenth(1), tenth(9)]
  const walMB = (last.readBytes - first.readBytes) / 1e6
  const cpuPerMB = ((last.cpuS - first.cpuS) * 1000) / walMB
  results.exporter = { seconds, walMB, cpuS: last.cpuS - first.cpuS, rss, liveHeap }
  const over = `${Math.round(seconds / 60) || seconds} ${seconds >= 60 ? 'min' : 's'} under pgbench -c 4 (synchronous_commit off), ${walMB.toFixed(0)} MB of WAL read`
  rows.push(
    {
      section: 'exporter',
      measure: `walcost exporter's RSS, early (second tenth's median) and late (last tenth's), ${over}`,
      value: `${early.toFixed(0)} MB, ${late.toFixed(0)} MB`,
      target: quick ? '-' : 'flat',
    },
    liveHeapRow('exporter', 'walcost exporter', liveHeap, seconds),
    {
      section: 'exporter',
      measure: "walcost exporter's RSS, each tenth's median (MB)",
      value: tenthsMB(rss, seconds, (sample) => sample.rssMB, median),
      target: '-',
    },
    {
      section: 'exporter',
      measure: "walcost exporter's CPU a MB of WAL read (its process_cpu_seconds_total / walcost_wal_read_lsn_bytes)",
      value: `${cpuPerMB.toFixed(1)} ms/MB`,
      target: '-',
    },
  )
}
