import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

/** `walcost demo` as a user starts it, with its output collected. */
function demo(url: string, args: string[] = []) {
  const child = spawn(process.execPath, [cli, 'demo', '--url', url, ...args], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  })
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
  })
  child.stderr.on('data', (chunk) => {
    output += chunk
  })
  const exited = once(child, 'exit').then(([code]) => ({ code: code as number | null, output }))
  return { child, exited }
}

describeOnPostgres('walcost demo on a real server', () => {
  let database: TestDatabase
  beforeAll(async () => {
    database = await openPostgresDatabase(inject('postgresUrl'))
  })
  afterAll(() => database?.close())

  const schemaExists = async () => {
    const [row] = await database.query<{ found: boolean }>(
      `select to_regnamespace('walcost_demo') is not null as found`,
    )
    return row?.found === true
  }

  it('stops on Ctrl-C, drops the schema it created and says so; the next demo runs', async () => {
    const url = database.url ?? ''
    const { child, exited } = demo(url)
    // Interrupted once its committed setup (the schema and the prefill) is there, while it measures.
    for (let waited = 0; !(await schemaExists()); waited++) {
      expect(waited, 'the demo never created its schema').toBeLessThan(1_200)
      expect(child.exitCode).toBeNull()
      await sleep(100)
    }
    expect(child.pid).toBeGreaterThan(0)
    process.kill(child.pid as number, 'SIGINT')
    const { code, output } = await exited
    expect(code).toBe(130)
    expect(output).toContain('walcost demo: interrupted; rolling back and dropping what the demo created...')
    expect(output).toContain(
      'walcost demo: the demo was stopped; schema walcost_demo, which it created, is dropped, and its runs were rolled back.',
    )
    expect(await schemaExists()).toBe(false)
    const next = await demo(url, ['--prefill-rows', '5000', '--batch-rows', '1000']).exited
    expect(next.code, next.output).toBe(0)
    expect(await schemaExists()).toBe(false)
  })

  it('as a role without CREATE on the database, names the grant it needs', async () => {
    const role = `walcost_nocreate_${randomBytes(4).toString('hex')}`
    await database.exec(`create role ${role} login password 'walcost'`)
    try {
      const url = new URL(database.url ?? '')
      url.username = role
      url.password = 'walcost'
      const { code, output } = await demo(url.toString()).exited
      expect(code).toBe(2)
      const [names] = await database.query<{ database: string }>('select current_database() as database')
      expect(output).toContain(
        `walcost demo: PERMISSION_DENIED: the demo creates schema walcost_demo (and drops it at the end), which needs CREATE on the database: GRANT CREATE ON DATABASE "${names?.database}" TO "${role}", or run the demo as a role that has it.`,
      )
      expect(output).not.toContain("table's owner")
      expect(await schemaExists()).toBe(false)
    } finally {
      await database.exec(`drop role ${role}`)
    }
  })
})
