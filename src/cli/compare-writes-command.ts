import { compareWriteScenarios, writeScenariosOptionsSchema } from '../compare/write-scenarios.js'
import { DEFAULT_FILLFACTORS } from '../core/defaults.js'
import {
  BATCH_FLAGS,
  batchInput,
  command,
  NOT_ON_THE_COMMAND_LINE,
  plain,
  repeated,
  WRITE_FLAGS,
  writeBatch,
} from './command.js'

export default command({
  schema: writeScenariosOptionsSchema,
  skip: [...NOT_ON_THE_COMMAND_LINE, 'fillfactors'],
  extra: [
    ...BATCH_FLAGS,
    ...WRITE_FLAGS,
    repeated(
      'fillfactor',
      `--fillfactor N\n      rewrite a copy of the table at this fillfactor (default ${DEFAULT_FILLFACTORS.join(', ')}); repeat for more`,
    ),
  ],
  async prepare(input, values) {
    const fillfactors = Array.isArray(values.fillfactor) ? { fillfactors: values.fillfactor.map(Number) } : {}
    return { ...(await batchInput(input, values)), ...writeBatch(values), ...fillfactors }
  },
  run: async (options) => plain(await compareWriteScenarios(options)),
})
