import { predictInsertCost, predictOptionsSchema } from '../model/predict.js'
import { batchInput, command, connection, html, json, option, plain, readJson, setupFile, vega } from './command.js'

export default command({
  schema: predictOptionsSchema,
  skip: ['db', 'description', 'signal'],
  extra: [
    connection,
    json,
    vega,
    html,
    setupFile,
    option(
      'description',
      '--description FILE\n      a planned table as JSON: { columns: [{ name, type, nullable, avgWidth }], indexes: [{ name, method, columns, keyOrder, keys }] }',
    ),
  ],
  async prepare(input, values) {
    if (typeof values.description !== 'string') return batchInput(input, values)
    const { db: _unused, ...rest } = await batchInput(input, values)
    return { ...rest, description: await readJson('description', values.description) }
  },
  run: async (options) => plain(await predictInsertCost(options)),
})
