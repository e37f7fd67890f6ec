import { spawn } from 'node:child_process'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path, { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { integer } from '../src/core/format.js'
import { recordDebianWal } from '../test/support/debian.js'
import { median, quick, ratio, results, rows } from './common.js'
import { peakResidentMB } from './live.js'

/** A whole process's time and its peak resident set, read from /proc (VmHWM) while it runs. */
async function timedProcess(command: string, args: string[]): Promise<{ seconds: number; peakMB: number }> {
  const started = performance.now()
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  let exitCode: number | null | undefined
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', reject)
    child.on('exit', (code) => {
      exitCode = code
      resolve()
    })
  })
  let peakMB = 0
  while (exitCode === undefined) {
    peakMB = Math.max(peakMB, (await peakResidentMB(child.pid as number)) ?? 0)
    await Promise.race([exited, sleep(5)])
  }
  const seconds = (performance.now() - started) / 1000
  if (exitCode !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${exitCode}: ${stderr}`)
  return { seconds, peakMB }
}

/** Runs `a` and `b` in turns, so that neither always runs right after the other: the medians of each, after a warming round. */
async function alternated(
  a: () => Promise<{ seconds: number; peakMB: number }>,
  b: () => Promise<{ seconds: number; peakMB: number }>,
  rounds: number,
) {
  await a()
  await b()
  const first: Array<{ seconds: number; peakMB: number }> = []
  const second: typeof first = []
  for (let i = 0; i < rounds; i++) {
    if (i % 2 === 0) {
      first.push(await a())
      second.push(await b())
    } else {
      second.push(await b())
      first.push(await a())
    }
  }
  const medians = (runs: typeof first) => ({
    seconds: median(runs.map((run) => run.seconds)),
    peakMB: median(runs.map((run) => run.peakMB)),
  })
  return { a: medians(first), b: medians(second) }
}

/** WAL that Debian's PostgreSQL wrote under pgbench, in a folder of its own, and what pg_waldump needs to read it. */
async function recordedWal(folder: string, name: string, options: Parameters<typeof recordDebianWal>[1]) {
  const wal = join(folder, name)
  const { server, binDir, first, last } = await recordDebianWal(wal, options)
  await server.stop()
  const files = await readdir(wal)
  let bytes = 0
  for (const file of files) bytes += (await stat(join(wal, file))).size
  const cli = new URL('../dist/cli.js', import.meta.url).pathname
  return {
    bytes,
    files: files.length,
    version: path.basename(path.dirname(binDir)),
    waldump: () => timedProcess(join(binDir, 'pg_waldump'), ['--stats=record', '-p', wal, first, last]),
    walcost: (...flags: string[]) => timedProcess(process.execPath, [cli, 'inspect', wal, '--json', ...flags]),
  }
}

/**
 * walcost inspect against pg_waldump --stats=record on the same files, as whole processes, the
 * medians of alternated runs on warm files, with each one's peak memory: WAL that Debian's
 * PostgreSQL and pgbench wrote (at least 1 GB in full mode), and WAL of small records (pgbench's
 * updates alone on a small scale). pg_waldump only counts by record type; inspect also splits by
 * relation and checks every record's CRC, as pg_waldump does. Then walcost's two worker threads
 * against one on the large WAL, and the speed on 8 cores that scaling implies.
 */
export async function inspect() {
  const folder = await mkdtemp(join(tmpdir(), 'walcost-bench-wal-'))
  const rounds = quick ? 3 : 7
  try {
    const large = await recordedWal(folder, 'large', quick ? { scale: 3, seconds: 2 } : { scale: 80, seconds: 10 })
    const largeRuns = await alternated(() => large.walcost(), large.waldump, rounds)
    const small = await recordedWal(folder, 'small', {
      scale: 1,
      seconds: quick ? 3 : 40,
      flags: ['-c', 'synchronous_commit=off'],
    })
    const smallRuns = await alternated(() => small.walcost(), small.waldump, rounds)
    const scaling = await alternated(
      () => large.walcost('--parallel', '1'),
      () => large.walcost('--parallel', '2'),
      rounds,
    )
    // Amdahl's law from the two runs: the share of the work that divides among workers, and the
    // speed-up that share gives on 8 cores.
    const speedup = scaling.a.seconds / scaling.b.seconds
    const dividing = Math.min(1, Math.max(0, 2 * (1 - 1 / speedup)))
    const eightCores = 1 / (1 - dividing + dividing / 8)
    results.inspect = {
      large: { bytes: large.bytes, files: large.files, walcost: largeRuns.a, waldump: largeRuns.b },
      small: { bytes: small.bytes, files: small.files, walcost: smallRuns.a, waldump: smallRuns.b },
      scaling: { oneWorker: scaling.a, twoWorkers: scaling.b, speedup, dividing, eightCores },
    }
    const speed = (wal: typeof large, runs: typeof largeRuns, what: string, target: string) =>
      rows.push({
        section: 'inspect',
        measure: `walcost inspect's speed / pg_waldump --stats=record's, ${(wal.bytes / 1e6).toFixed(0)} MB of PostgreSQL ${wal.version} WAL, ${what} (${(wal.bytes / 1e6 / runs.a.seconds).toFixed(0)} against ${(wal.bytes / 1e6 / runs.b.seconds).toFixed(0)} MB/s)`,
        value: ratio(runs.b.seconds / runs.a.seconds),
        target: quick ? '-' : target,
      })
    speed(large, largeRuns, "pgbench's load and its initial COPY", '>= 0.5x')
    speed(small, smallRuns, "small records (pgbench's updates)", '>= 0.5x')
    rows.push({
      section: 'inspect',
      measure: `peak memory (MB), walcost inspect / pg_waldump, on the ${(large.bytes / 1e6).toFixed(0)} MB and the ${(small.bytes / 1e6).toFixed(0)} MB`,
      value: `${integer(largeRuns.a.peakMB)} / ${integer(largeRuns.b.peakMB)}, ${integer(smallRuns.a.peakMB)} / ${integer(smallRuns.b.peakMB)}`,
      target: 'flat with the WAL',
    })
    rows.push({
      section: 'inspect',
      measure: `walcost inspect on the ${(large.bytes / 1e6).toFixed(0)} MB, 2 worker threads / 1 (the speed-up), and its speed / pg_waldump's on 8 cores by Amdahl's law from it`,
      value: `${ratio(speedup)}, ${ratio((eightCores * largeRuns.b.seconds) / scaling.a.seconds)}`,
      target: '-',
    })
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}
