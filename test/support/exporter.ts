import { type ChildProcess, spawn } from 'node:child_process'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** One sample of Prometheus' text format: the metric's name, its labels and its value. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Prometheus' text format (as prom-client writes it) as samples; comments left out. */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!match) throw new Error(`not a sample: ${line}`)
    const labels: Record<string, string> = {}
    for (const label of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

/** The samples of one metric whose labels include `having`. */
export const samplesOf = (samples: Sample[], name: string, having: Record<string, string> = {}) =>
  samples.filter(
    (sample) => sample.name === name && Object.entries(having).every(([key, value]) => sample.labels[key] === value),
  )

/** The value of a gauge (or counter) without labels of its own; 0 when absent. */
export const gauge = (samples: Sample[], name: string) => samplesOf(samples, name)[0]?.value ?? 0

/** The sum of a metric's samples that have `having`. */
export const sumOf = (samples: Sample[], name: string, having: Record<string, string> = {}) =>
  samplesOf(samples, name, having).reduce((sum, sample) => sum + sample.value, 0)

/** A `walcost exporter` process, its metrics' URL, and what it printed on stderr. */
export interface RunningExporter {
  child: ChildProcess
  url: string
  stderr(): string
  scrape(): Promise<Sample[]>
  /** SIGTERM, and its exit code once it exited. */
  stop(): Promise<number | null>
}

/** Starts `walcost exporter` with `args` on a free port and waits for it to listen. */
export function startExporter(args: string[]): Promise<RunningExporter> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'exporter', '--listen', '127.0.0.1:0', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
    void exited.then((code) => reject(new Error(`walcost exporter exited (${code}) before it listened: ${stderr}`)))
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      const url = /serving (http:\/\/\S+)/.exec(stderr)?.[1]
      if (!url) return
      resolve({
        child,
        url,
        stderr: () => stderr,
        scrape: async () => {
          const response = await fetch(url)
          if (!response.ok) throw new Error(`scrape failed: ${response.status}`)
          return parseMetrics(await response.text())
        },
        stop: async () => {
          child.kill('SIGTERM')
          return exited
        },
      })
    })
  })
}

/** Scrapes until `until` holds of the samples (every 200 ms, at most `timeoutMs`), and gives those samples. */
export async function scrapeUntil(
  exporter: RunningExporter,
  until: (samples: Sample[]) => boolean,
  timeoutMs = 60_000,
): Promise<Sample[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const samples = await exporter.scrape().catch(() => null)
    if (samples && until(samples)) return samples
    if (Date.now() > deadline)
      throw new Error(`the exporter's metrics did not come to the state waited for: ${exporter.stderr()}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}
