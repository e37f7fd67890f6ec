import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { loadCheckConfig } from '../../src/ci/check.js'
import { parseOptions } from '../../src/core/options.js'
import {
  calibrateIngest,
  checkWalBudget,
  estimateIngestCeiling,
  measureInsertCost,
  WalcostError,
  walSummary,
} from '../../src/index.js'
import {
  auditOptionsSchema,
  ceilingOptionsSchema,
  fieldNotesOptionsSchema,
  measureOptionsSchema,
  migrationOptionsSchema,
  predictOptionsSchema,
  remediesOptionsSchema,
  scenariosOptionsSchema,
  summaryOptionsSchema,
  walBudgetSchema,
  writeOptionsSchema,
  writeScenariosOptionsSchema,
} from '../../src/schemas.js'
import { insertCost } from './fixtures.js'

/** Extra keys, spread in so that TypeScript lets a typo through, as JavaScript callers would. */
const typo = (keys: Record<string, unknown>): object => keys

const refusal = (run: () => unknown): WalcostError => {
  try {
    run()
  } catch (error) {
    if (error instanceof WalcostError) return error
    throw error
  }
  throw new Error('expected INVALID_OPTIONS')
}

describe('every public input refuses a key it does not know', () => {
  const batch = { table: 't', count: 10 }
  const schemas = {
    measureOptionsSchema: [measureOptionsSchema, batch],
    writeOptionsSchema: [writeOptionsSchema, batch],
    scenariosOptionsSchema: [scenariosOptionsSchema, batch],
    remediesOptionsSchema: [remediesOptionsSchema, batch],
    auditOptionsSchema: [auditOptionsSchema, { table: 't' }],
    migrationOptionsSchema: [migrationOptionsSchema, { ...batch, migration: 'select 1' }],
    writeScenariosOptionsSchema: [writeScenariosOptionsSchema, batch],
    predictOptionsSchema: [predictOptionsSchema, { table: 't' }],
    ceilingOptionsSchema: [ceilingOptionsSchema, {}],
    fieldNotesOptionsSchema: [fieldNotesOptionsSchema, {}],
    summaryOptionsSchema: [summaryOptionsSchema, {}],
    walBudgetSchema: [walBudgetSchema, { bytesPerRow: 100 }],
  } as const

  for (const [name, [schema, valid]] of Object.entries(schemas)) {
    it(`${name}: an unknown key is INVALID_OPTIONS naming it`, () => {
      expect(() => parseOptions(schema, valid)).not.toThrow()
      const error = refusal(() => parseOptions(schema, { ...valid, lockTimeotMs: 5 }))
      expect(error.code).toBe('INVALID_OPTIONS')
      expect(error.field).toBe('lockTimeotMs')
      expect(error.message).toMatch(/^unknown option lockTimeotMs/)
    })
  }

  it('suggests the nearest known key, and puts the unknown key before the problems it causes', () => {
    const error = refusal(() => parseOptions(measureOptionsSchema, { table: 't', cout: 10 }))
    // Without the typo's own message, this would read "give the batch as exactly one of ...".
    expect(error.message).toBe('unknown option cout; did you mean count?')
    expect(
      refusal(() => parseOptions(measureOptionsSchema, { ...batch, chekpoint: true, methd: 'copy' })).message,
    ).toBe(
      'unknown options chekpoint (did you mean checkpoint?), methd (did you mean method?); the options are ' +
        `${Object.keys(measureOptionsSchema.shape).join(', ')}.`,
    )
    expect(refusal(() => parseOptions(measureOptionsSchema, { ...batch, colour: 'red' })).message).toMatch(
      /^unknown option colour; the options are db, connectTimeoutMs, /,
    )
  })

  it('names a nested key by its path, through unions, arrays and transforms', () => {
    const update = { rows: 5, set: { v: '1' }, pik: 'oldest' }
    expect(refusal(() => parseOptions(writeOptionsSchema, { table: 't', update })).message).toBe(
      'unknown option update.pik; did you mean update.pick?',
    )
    const storage = { writeMBps: 100, iops: 1000, fsynMs: 1 }
    expect(refusal(() => parseOptions(ceilingOptionsSchema, { storage })).message).toBe(
      'unknown option storage.fsynMs; did you mean storage.fsyncMs?',
    )
    const description = { columns: [{ name: 'a', type: 'int4', nulable: true }] }
    expect(refusal(() => parseOptions(predictOptionsSchema, { description })).message).toBe(
      'unknown option description.columns.0.nulable; did you mean description.columns.0.nullable?',
    )
    expect(refusal(() => parseOptions(auditOptionsSchema, { table: 't', rowsPerSecond: 10 })).message).toBe(
      'unknown option rowsPerSecond; did you mean rowsPerSec?',
    )
  })

  it('the entry points refuse before they open a database', async () => {
    await expect(
      measureInsertCost({ table: 't', count: 10, ...typo({ chekpoint: true, methd: 'copy' }) }),
    ).rejects.toThrow(/unknown options chekpoint \(did you mean checkpoint\?\), methd \(did you mean method\?\)/)
    expect(() => estimateIngestCeiling({ bytesPerRow: 100 }, { storage: 'gp3', ...typo({ replica: 2 }) })).toThrow(
      'unknown option replica; did you mean replicas?',
    )
    expect(() => walSummary(insertCost, { ...typo({ rounding: 1 }) })).toThrow(/did you mean round\?/)
  })

  it('a budget with a misspelt key fails instead of passing by ignoring it', () => {
    expect(() => checkWalBudget(insertCost, { bytesPerRow: 10_000, ...typo({ indexs: { t_v: 1 } }) })).toThrow(
      'unknown option indexs; did you mean indexes?',
    )
  })

  it('a budget naming an index the table does not have is INVALID_OPTIONS, with the indexes it has', () => {
    const refused = () => checkWalBudget(insertCost, { indexes: { orders_customr_idx: 5 } })
    expect(refused).toThrow(WalcostError)
    expect(refused).toThrow(
      'budget indexes.orders_customr_idx: "public"."orders" has no index orders_customr_idx (its indexes: orders_customer_idx, orders_pkey, orders_status_placed_idx). Did you mean orders_customer_idx?',
    )
    expect(() => checkWalBudget(insertCost, { indexes: { nonexistent_idx: 5 } })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', field: 'indexes.nonexistent_idx' }),
    )
  })

  it('a check config with a misspelt key is refused, naming the file and the key', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'walcost-config-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    const measurement = { name: 'm', table: 't', count: 10, checkpiont: true, budget: { bytesPerRow: 1 } }
    await writeFile(join(directory, 'walcost.config.json'), JSON.stringify({ measurements: [measurement] }))
    const error = await loadCheckConfig(undefined, directory).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(WalcostError)
    expect((error as WalcostError).message).toBe(
      `${join(directory, 'walcost.config.json')}: unknown option measurements.0.checkpiont; did you mean measurements.0.checkpoint?`,
    )
    const budget = { name: 'm', table: 't', count: 10, budget: { bytesPerRow: 1, indexs: { t_v: 1 } } }
    await writeFile(join(directory, 'walcost.config.json'), JSON.stringify({ measurements: [budget] }))
    await expect(loadCheckConfig(undefined, directory)).rejects.toThrow(
      /unknown option measurements\.0\.budget\.indexs; did you mean measurements\.0\.budget\.indexes\?/,
    )
    await writeFile(join(directory, 'walcost.config.json'), '{ "measurements": [')
    await expect(loadCheckConfig(undefined, directory)).rejects.toThrow(/walcost\.config\.json is not a JSON object/)
  })

  it('says why calibrateIngest needs two sizes of commit where one is given', async () => {
    await expect(
      calibrateIngest({ db: 'postgres://nobody@127.0.0.1:1/none', table: 't', rowsPerCommit: [100] }),
    ).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      field: 'rowsPerCommit',
      message: expect.stringMatching(
        /^rowsPerCommit: give at least two sizes, e\.g\. \[1, 100\]: the time a row and the time a commit/,
      ),
    })
  })
})
