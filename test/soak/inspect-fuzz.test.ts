import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshSeed, seededRandom } from '../../src/core/random.js'
import { inspectWal, WalcostError, type WalObservation } from '../../src/index.js'
import { startPostgres } from '../support/postgres-server.js'

// Thousands of damaged copies of real WAL segments, each read by inspectWal: every one is either
// refused with WAL_UNREADABLE naming a file and an LSN, or read to the same totals as the undamaged
// files (as far as they go), within bounds of time and memory. Replay a failure with its seed.
const seed = Number(process.env.WALCOST_FUZZ_SEED ?? freshSeed())
const mutationCount = Number(process.env.WALCOST_FUZZ_MUTATIONS ?? 2_000)
console.log(
  `inspect fuzz seed ${seed}, ${mutationCount} mutated segments (replay: WALCOST_FUZZ_SEED=${seed} npm run test:soak)`,
)

const PAGE = 8192
const OTHER_MAGICS = [0xd10d, 0xd110, 0xd113, 0xd116]
/** Longer than any one reading of these few megabytes could take, however loaded the machine. */
const READ_BOUND_MS = 60_000
const RSS_BOUND_BYTES = 512 * 1024 * 1024

type Mutation = (bytes: Buffer, random: () => number) => Buffer
const pick = (random: () => number, below: number) => Math.floor(random() * below)
const mutations: Record<string, Mutation> = {
  'a flipped bit': (bytes, random) => {
    bytes[pick(random, bytes.length)]! ^= 1 << pick(random, 8)
    return bytes
  },
  'cut short': (bytes, random) => bytes.subarray(0, pick(random, bytes.length)),
  'zero-filled past a page': (bytes, random) => bytes.fill(0, pick(random, bytes.length / PAGE) * PAGE),
  'a zeroed page': (bytes, random) => {
    const at = pick(random, bytes.length / PAGE) * PAGE
    return bytes.fill(0, at, at + PAGE)
  },
  "another major's page": (bytes, random) => {
    bytes.writeUInt16LE(OTHER_MAGICS[pick(random, OTHER_MAGICS.length)]!, pick(random, bytes.length / PAGE) * PAGE)
    return bytes
  },
  'eight bytes overwritten (an xl_prev, a length, a header)': (bytes, random) => {
    const at = pick(random, bytes.length / 8) * 8
    for (let i = 0; i < 8; i++) bytes[at + i] = pick(random, 256)
    return bytes
  },
  'a page copied over another': (bytes, random) => {
    const pages = bytes.length / PAGE
    bytes.copy(bytes, pick(random, pages) * PAGE, pick(random, pages) * PAGE, PAGE)
    return bytes
  },
  'not WAL at all': (bytes, random) => {
    for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE(pick(random, 2 ** 32), i)
    return bytes
  },
}

/** What a reading says of the WAL, without where it came from. */
const totalsOf = (observation: WalObservation) => ({
  window: observation.window,
  relations: observation.relations,
  unattributed: observation.unattributed,
  transactions: observation.transactions,
  fpiReasons: observation.fpiReasons,
})

describe('inspectWal on damaged segments', () => {
  let folder: string
  let intact: string
  let names: string[]
  const original = new Map<string, Buffer>()
  beforeAll(async () => {
    // 1 MB segments: a few megabytes of WAL are several segments, and each mutation is cheap.
    const server = await startPostgres([], undefined, { initdbFlags: ['--wal-segsize=1'] })
    folder = await mkdtemp(join(tmpdir(), 'walcost-fuzz-'))
    intact = join(folder, 'intact')
    try {
      const client = new pg.Client(server.url)
      await client.connect()
      const [{ first } = { first: '' }] = (
        await client.query<{ first: string }>('select pg_walfile_name(pg_current_wal_insert_lsn()) as first')
      ).rows
      for (const statement of [
        'create table fuzzed (id int8 primary key, v int4, tags int4[], body text)',
        'create index fuzzed_v on fuzzed (v)',
        'create index fuzzed_tags on fuzzed using gin (tags)',
        `insert into fuzzed select i, i % 97, array[i % 7, i % 13], repeat(md5(i::text), 1 + i % 40) from generate_series(1, 8000) i`,
        'checkpoint',
        'update fuzzed set v = v + 1 where id % 3 = 0',
        'begin',
        'delete from fuzzed where id % 5 = 0',
        'rollback',
        'truncate fuzzed',
        `insert into fuzzed select i, i, null, repeat('x', 3000) from generate_series(1, 300) i`,
      ])
        await client.query(statement)
      const [{ last } = { last: '' }] = (
        await client.query<{ last: string }>('select pg_walfile_name(pg_current_wal_insert_lsn()) as last')
      ).rows
      await client.query('select pg_switch_wal()')
      await client.end()
      await mkdir(intact)
      for (const name of await readdir(join(server.dataDir, 'pg_wal')))
        if (/^[0-9A-F]{24}$/.test(name) && name >= first && name <= last)
          await copyFile(join(server.dataDir, 'pg_wal', name), join(intact, name))
    } finally {
      await server.stop()
    }
    names = (await readdir(intact)).sort()
    for (const name of names) original.set(name, await readFile(join(intact, name)))
  }, 300_000)
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true })
  })

  it('refuses each damaged file with its name and LSN, or reads the same totals, never crashing, hanging or growing', async () => {
    expect(names.length).toBeGreaterThanOrEqual(3)
    const reference = await inspectWal({ dir: intact, parallel: 1 })
    expect(reference.files.bad).toEqual([])
    const damaged = join(folder, 'damaged')
    await mkdir(damaged)
    for (const name of names) await writeFile(join(damaged, name), original.get(name)!)
    const random = seededRandom(seed)
    const outcomes: Record<string, number> = {}
    const count = (outcome: string) => {
      outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
    }
    let unhandled = 0
    const onUnhandled = () => {
      unhandled += 1
    }
    process.on('unhandledRejection', onUnhandled)
    const rssBefore = process.memoryUsage().rss
    let rssPeak = rssBefore
    try {
      for (let trial = 0; trial < mutationCount; trial++) {
        const name = names[pick(random, names.length)]!
        const kinds = Object.keys(mutations)
        const kind = kinds[pick(random, kinds.length)]!
        const skipBad = random() < 0.25
        // Read in one thread or, a third of the time, in stretches by worker threads (slower to
        // start), joined: the same either way.
        const parallel = random() < 2 / 3 ? 1 : 2 + pick(random, 2)
        const context = `trial ${trial} (seed ${seed}): ${kind} in ${name}${skipBad ? ', skipBad' : ''}, parallel ${parallel}`
        await writeFile(join(damaged, name), mutations[kind]!(Buffer.from(original.get(name)!), random))
        let timer: NodeJS.Timeout | undefined
        const outcome = await Promise.race([
          inspectWal({ dir: damaged, skipBad, parallel }).catch((error: unknown) => error),
          new Promise((resolve) => {
            timer = setTimeout(() => resolve('hang'), READ_BOUND_MS)
          }),
        ]).finally(() => clearTimeout(timer))
        await writeFile(join(damaged, name), original.get(name)!)
        expect(outcome, context).not.toBe('hang')
        if (outcome instanceof Error) {
          expect(outcome, `${context}: ${outcome.stack}`).toBeInstanceOf(WalcostError)
          const failure = outcome as WalcostError
          expect(failure.code, `${context}: ${failure.message}`).toBe('WAL_UNREADABLE')
          expect(failure.file, context).toBeTruthy()
          expect(failure.lsn, context).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/)
          count('refused')
          continue
        }
        const observation = outcome as WalObservation<'files'>
        if (observation.files.bad.length > 0) {
          expect(observation.files.bad, context).toHaveLength(1)
          const [blamed] = observation.files.bad
          // A record across two files that fails is left out with the file it ends in, and the
          // reason names the file it begins in: the damage may be in either.
          if (blamed?.name !== name) expect(blamed?.reason, context).toContain(`the record begins in ${name}`)
          // Left out whole: the same as reading the other files alone, its WAL a gap.
          const others = names.filter((other) => other !== blamed?.name).map((other) => join(intact, other))
          expect(totalsOf(observation), context).toEqual(totalsOf(await inspectWal({ files: others })))
          count('left out')
        } else if (observation.files.endOfWal !== null && name === names.at(-1)) {
          // Only the newest segment may end early: the totals are those of the WAL before its end.
          const before = await inspectWal({ dir: intact, to: observation.window.endLsn })
          expect(totalsOf(observation), context).toEqual({
            ...totalsOf(before),
            window: { ...before.window },
          })
          count('ended early')
        } else {
          expect(totalsOf(observation), context).toEqual(totalsOf(reference))
          count('same totals')
        }
        if (trial % 50 === 0) rssPeak = Math.max(rssPeak, process.memoryUsage().rss)
      }
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    console.log(
      `inspect fuzz seed ${seed}: ${JSON.stringify(outcomes)}, RSS ${(rssBefore / 1e6).toFixed(0)} -> peak ${(rssPeak / 1e6).toFixed(0)} MB`,
    )
    expect(unhandled).toBe(0)
    expect(rssPeak - rssBefore).toBeLessThan(RSS_BOUND_BYTES)
    expect(outcomes.refused ?? 0).toBeGreaterThan(mutationCount / 4)
  }, 3_600_000)
})
