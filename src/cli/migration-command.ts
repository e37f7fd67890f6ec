import { compareMigration, migrationOptionsSchema } from '../compare/migration.js'
import { BATCH_FLAGS, batchInput, command, NOT_ON_THE_COMMAND_LINE, option, plain, readText } from './command.js'

export default command({
  schema: migrationOptionsSchema,
  skip: [...NOT_ON_THE_COMMAND_LINE, 'migration'],
  extra: [...BATCH_FLAGS, option('migration', '--migration FILE\n      the migration as SQL, read from FILE')],
  async prepare(input, values) {
    const migration =
      typeof values.migration === 'string' ? { migration: await readText('migration', values.migration) } : {}
    return { ...(await batchInput(input, values)), ...migration }
  },
  run: async (options) => plain(await compareMigration(options)),
})
