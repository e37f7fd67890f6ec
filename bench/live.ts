// For the sections that follow a process over time (watch, exporter, inspect): memory
// read from /proc, the live heap sampled over a run, and pgbench's load beside it.
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { here, median, quick, rows, run } from './common.js'

/** A memory figure of a process's in MB, from /proc (Linux); null where it cannot be read. */
async function statusMB(pid: number, field: 'VmRSS' | 'VmHWM'): Promise<number | null> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => null)
  const kB = status?.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1]
  return kB === undefined ? null : Number(kB) / 1000
}

/** A process's resident set in MB; null where it cannot be read. */
export const residentMB = (pid: number) => statusMB(pid, 'VmRSS')

/** The most a process's resident set has been so far, in MB; null where it cannot be read. */
export const peakResidentMB = (pid: number) => statusMB(pid, 'VmHWM')

/**
 * The live heap after each full collection of a process started with --trace-gc, from the lines
 * it prints on stdout: what the process holds, whatever RSS keeps. Other lines go to `onLine`.
 */
export function liveHeapOf(
  stdout: NodeJS.ReadableStream,
  began: number,
  onLine: (line: string, atS: number) => void = () => undefined,
): Array<{ atS: number; heapMB: number }> {
  const liveHeap: Array<{ atS: number; heapMB: number }> = []
  let pending = ''
  stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      const atS = (performance.now() - began) / 1000
      const collected = line.match(/Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(/)?.[1]
      if (collected !== undefined) liveHeap.push({ atS, heapMB: Number(collected) })
      else onLine(line, atS)
    }
  })
  return liveHeap
}

/** Samples of a run of `seconds` in the `count` equal parts of its time (the last part takes any later ones). */
export const partOf = <T extends { atS: number }>(samples: T[], seconds: number, count: number, i: number) =>
  samples.filter((sample) => Math.min(count - 1, Math.floor((sample.atS * count) / seconds)) === i)

/** The bench row of a reader's live heap after full collections, each tenth's median: flat is the target. */
export function liveHeapRow(
  section: string,
  reader: string,
  liveHeap: Array<{ atS: number; heapMB: number }>,
  seconds: number,
) {
  return {
    section,
    measure: `${reader}'s live heap after full collections, each tenth's median (MB)`,
    value: tenthsMB(liveHeap, seconds, (sample) => sample.heapMB, median),
    target: quick ? '-' : 'flat',
  }
}

/** `pick` of each tenth of the run's samples, in whole MB ('-' for a tenth with none). */
export function tenthsMB<T extends { atS: number }>(
  samples: T[],
  seconds: number,
  value: (sample: T) => number,
  pick: (values: number[]) => number,
): string {
  return Array.from({ length: 10 }, (_, i) => {
    const values = partOf(samples, seconds, 10, i).map(value)
    return values.length === 0 ? '-' : pick(values).toFixed(0)
  }).join(' ')
}

/**
 * pgbench initialised and then running from four connections for `seconds`, as the long-running
 * readers' benchmarks load a server; null (and a row saying so) where pgbench is not installed.
 * Without waiting for each commit's flush, pgbench writes several times the WAL a second on this
 * machine.
 */
export async function pgbenchLoad(url: string, section: string, seconds: number) {
  try {
    await run('pgbench', ['-i', '-q', '-s', quick ? '1' : '10', url])
  } catch {
    rows.push({ section, measure: 'pgbench', value: 'pgbench not found', target: '-' })
    return null
  }
  const load = run('pgbench', ['-c', '4', '-j', '2', '-T', String(seconds), url], {
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, PGOPTIONS: '-c synchronous_commit=off' },
  })
  load.catch(() => undefined)
  // In an object: an async function's promise would take on pgbench's own and wait for its end, so
  // that the readers would start on an idle server.
  return { finished: load }
}

/** The CLI run from its sources with --trace-gc: each full collection's line on stdout says the live heap after it, what is held whatever RSS keeps. */
export function tracedCli(args: string[]) {
  return spawn(process.execPath, ['--trace-gc', '--import', 'tsx', `${here}../src/cli/cli.ts`, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
}
