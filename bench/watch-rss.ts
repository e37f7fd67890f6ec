// Child of bench/run.ts: watches the server at URL for SECONDS in 1 s intervals and prints, as
// JSON, this process's RSS after each interval with the interval's WAL bytes.
import { watchWal } from '../src/index.js'

const [url = '', secondsText] = process.argv.slice(2)
const samples: Array<{ rssMB: number; walBytes: number }> = []
await watchWal({
  db: url,
  intervalMs: 1_000,
  durationMs: Number(secondsText) * 1000,
  onInterval: (interval) => {
    samples.push({ rssMB: process.memoryUsage().rss / 1e6, walBytes: interval.window.bytes })
  },
})
console.log(JSON.stringify(samples))
