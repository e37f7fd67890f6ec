import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path, { join } from 'node:path'
import { recordDebianWal } from '../test/support/debian.js'
import { median, quick, ratio, results, rows, run } from './common.js'

/**
 * walcost inspect against pg_waldump --stats=record on the same files, as whole processes, the
 * median of alternated runs on warm files: WAL that Debian's PostgreSQL and pgbench wrote (at least
 * 1 GB in full mode). pg_waldump only counts by record type; inspect also splits by relation and
 * checks every record's CRC, as pg_waldump does.
 */
export async function inspect() {
  const folder = await mkdtemp(join(tmpdir(), 'walcost-bench-wal-'))
  try {
    const wal = join(folder, 'wal')
    const {
      server: debian,
      binDir,
      first,
      last,
    } = await recordDebianWal(wal, quick ? { scale: 3, seconds: 2 } : { scale: 80, seconds: 10 })
    await debian.stop()
    const files = (await readdir(wal)).map((name) => join(wal, name))
    let bytes = 0
    for (const file of files) bytes += (await readFile(file)).length
    const cli = new URL('../dist/cli.js', import.meta.url).pathname
    const timed = async (command: string, args: string[]) => {
      const start = performance.now()
      await run(command, args, { maxBuffer: 256 * 1024 * 1024 })
      return (performance.now() - start) / 1000
    }
    const waldump = () => timed(join(binDir, 'pg_waldump'), ['--stats=record', '-p', wal, first, last])
    const walcost = () => timed(process.execPath, [cli, 'inspect', wal, '--json'])
    await waldump()
    await walcost()
    const pairs: Array<[number, number]> = []
    for (let i = 0; i < (quick ? 3 : 7); i++) {
      // Alternated, so that neither always runs right after the other.
      if (i % 2 === 0) pairs.push([await walcost(), await waldump()])
      else {
        const waldumpSeconds = await waldump()
        pairs.push([await walcost(), waldumpSeconds])
      }
    }
    const inspectSeconds = median(pairs.map((pair) => pair[0]))
    const waldumpSeconds = median(pairs.map((pair) => pair[1]))
    results.inspect = { bytes, files: files.length, inspectSeconds, waldumpSeconds, pairs }
    rows.push({
      section: 'inspect',
      measure: `walcost inspect's speed / pg_waldump --stats=record's, ${(bytes / 1e9).toFixed(2)} GB of PostgreSQL ${path.basename(path.dirname(binDir))} WAL (${(bytes / 1e6 / inspectSeconds).toFixed(0)} against ${(bytes / 1e6 / waldumpSeconds).toFixed(0)} MB/s)`,
      value: ratio(waldumpSeconds / inspectSeconds),
      target: quick ? '-' : '>= 1.0x',
    })
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}
