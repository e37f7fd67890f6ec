import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const script = new URL('../../scripts/cli-help-docs.mjs', import.meta.url).pathname

describe('docs/cli.md', () => {
  it("shows each command's --help as the built CLI prints it", async () => {
    const outcome = await run(process.execPath, [script, '--check']).then(
      () => 'fresh',
      (error: { stderr: string }) => error.stderr.trim(),
    )
    expect(outcome).toBe('fresh')
  })
})
