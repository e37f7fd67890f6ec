import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { WalObservation } from '../../src/index.js'

export type TypeTotals = Map<string, { records: number; bytes: number; fpiBytes: number }>
export type FileTotals = Map<string, { records: number; bytes: number }>

/** Every line pg_waldump prints for `args`, as it prints them. */
async function* waldumpLines(binDir: string, args: string[]): AsyncGenerator<string> {
  const child = spawn(join(binDir, 'pg_waldump'), args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve))
  yield* createInterface({ input: child.stdout })
  const code = await exited
  // pg_waldump ends with an error where the WAL runs out, after it printed everything before it.
  if (code !== 0 && !/invalid record length|could not find file/.test(stderr)) throw new Error(`pg_waldump: ${stderr}`)
}

/** Records and combined bytes by record type, from inspectWal's relations and the WAL of no relation. */
export function typesOf(observation: WalObservation): TypeTotals {
  const types: TypeTotals = new Map()
  for (const part of [...observation.relations!, ...observation.unattributed!]) {
    for (const type of part.recordTypes) {
      const sum = types.get(type.type) ?? { records: 0, bytes: 0, fpiBytes: 0 }
      sum.records += type.records
      sum.bytes += type.bytes
      sum.fpiBytes += type.fpiBytes
      types.set(type.type, sum)
    }
  }
  return types
}

/** pg_waldump --stats=record over the segments `first` to `last` in `folder`: by type, and its Total line (records, bytes). */
export async function waldumpTypes(
  binDir: string,
  folder: string,
  first: string,
  last: string,
): Promise<{ types: TypeTotals; total: number[] }> {
  const types: TypeTotals = new Map()
  let total: number[] = []
  for await (const line of waldumpLines(binDir, ['--stats=record', '-p', folder, first, last])) {
    const row = /^(\S+\/\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*[\d.]+\)\s+(\d+)/.exec(line)
    if (row) types.set(row[1]!, { records: Number(row[2]), bytes: Number(row[5]), fpiBytes: Number(row[4]) })
    const totals = /^Total\s+(\d+)\s+(\d+).*?(\d+)\s+\[[\d.]+%\]\s+(\d+)\s+\[/.exec(line)
    if (totals) total = [Number(totals[1]), Number(totals[4])]
  }
  return { types, total }
}

/**
 * pg_waldump's per-record output (-b) summed by database/relfilenode: a record's bytes without
 * images to its first block's file, each image to its own block's.
 */
export async function waldumpByFile(binDir: string, folder: string, first: string, last: string): Promise<FileTotals> {
  const byFile: FileTotals = new Map()
  const add = (key: string, records: number, bytes: number) => {
    const sum = byFile.get(key) ?? { records: 0, bytes: 0 }
    sum.records += records
    sum.bytes += bytes
    byFile.set(key, sum)
  }
  let pending: number | null = null
  for await (const line of waldumpLines(binDir, ['-b', '-p', folder, first, last])) {
    const record = /^rmgr: .*len \(rec\/tot\):\s*(\d+)\/\s*(\d+)/.exec(line)
    if (record) {
      pending = Number(record[1])
      continue
    }
    const block = /^\s+blkref #\d+: rel (\d+)\/(\d+)\/(\d+) (?:fork \w+ )?blk \d+(.*)$/.exec(line)
    if (!block) continue
    const key = `${block[2]}/${block[3]}`
    if (pending !== null) {
      add(key, 1, pending)
      pending = null
    }
    const image = /\(FPW\); hole: offset: \d+, length: (\d+)(?:, compression saved: (\d+))?/.exec(block[4]!)
    if (image) add(key, 0, 8192 - Number(image[1]) - Number(image[2] ?? 0))
  }
  return byFile
}

/** inspectWal's relations as database/relfilenode: what waldumpByFile sums. */
export function byFileOf(observation: WalObservation): FileTotals {
  const ours: FileTotals = new Map()
  for (const relation of observation.relations!)
    for (const file of relation.files) {
      if (relation.files.length !== 1) throw new Error(`${relation.name} has ${relation.files.length} files`)
      ours.set(`${relation.databaseOid}/${file.relfilenode}`, { records: relation.records, bytes: relation.bytes })
    }
  return ours
}
