/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { type Browser, chromium } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { estimateIngestCeiling } from '../../src/index.js'
import { type Result, toHtmlReport } from '../../src/report/index.js'
import { viewOf } from '../../src/report/views.js'
import { indexAudit, insertCost, remedies, scenarios } from '../unit/fixtures.js'

const run = promisify(execFile)
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
// As root in CI, with no network: the flags that keep Chromium from reaching for Google's services.
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

describe('the self-contained HTML report in headless Chromium', () => {
  let browser: Browser
  let dir: string
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true })
    dir = await mkdtemp(join(tmpdir(), 'walcost-report-'))
  })
  afterAll(async () => {
    await browser?.close()
    await rm(dir, { recursive: true, force: true })
  })

  /** Opens a report file; returns what the page shows and every request and console error it made. */
  async function open(path: string) {
    const page = await browser.newPage()
    const requests: string[] = []
    const errors: string[] = []
    page.on('request', (request) => requests.push(request.url()))
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text())
    })
    await page.goto(pathToFileURL(path).href)
    const shown = await page.evaluate(() => ({
      title: document.title,
      bars: [...document.querySelectorAll('svg g.bar')].map((bar) => ({
        group: bar.getAttribute('data-group'),
        widths: [...bar.querySelectorAll('rect')].map((rect) => rect.getBoundingClientRect().width),
      })),
      rows: document.querySelectorAll('tbody tr').length,
      height: document.body.getBoundingClientRect().height,
    }))
    await page.close()
    return { ...shown, requests, errors }
  }

  const results: Array<[string, Result]> = [
    ['a measurement', insertCost],
    ['a comparison', scenarios],
    ['an audit', indexAudit],
    ['remedies', remedies],
    ['a ceiling', estimateIngestCeiling({ bytesPerRow: 345 }, { storage: 'gp3', targetRowsPerSec: 50_000 })],
  ]

  it.each(results)('renders %s with one bar a group, its table, and loads nothing', async (name, result) => {
    const path = join(dir, `${name.replaceAll(' ', '-')}.html`)
    await writeFile(path, toHtmlReport(result))
    const view = viewOf(result)
    const shown = await open(path)
    expect(shown.title).toBe(view.title)
    const groups = [...new Set(view.chart.data.map((datum) => datum.group))]
    expect(shown.bars.map((bar) => bar.group)).toEqual(groups)
    for (const bar of shown.bars) {
      const total = view.chart.data
        .filter((datum) => datum.group === bar.group)
        .reduce((sum, datum) => sum + Math.max(0, datum.value), 0)
      if (total > 0) expect(Math.min(...bar.widths)).toBeGreaterThan(0)
    }
    expect(shown.rows).toBe(view.rows.length)
    expect(shown.height).toBeGreaterThan(100)
    expect(shown.requests).toEqual([pathToFileURL(path).href])
    expect(shown.errors).toEqual([])
  })

  it('is what walcost --html writes, from the command line', async () => {
    const path = join(dir, 'cli.html')
    await run(process.execPath, [
      '--import',
      'tsx',
      'src/cli/cli.ts',
      'ceiling',
      '--bytes-per-row',
      '345',
      '--html',
      path,
    ])
    const shown = await open(path)
    expect(shown.title).toMatch(/^Ingest ceiling on gp3/)
    expect(shown.bars).toHaveLength(3)
    expect(shown.requests).toHaveLength(1)
  })
})
