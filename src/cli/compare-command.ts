import { compareScenarios, scenariosOptionsSchema } from '../compare/scenarios.js'
import { BATCH_FLAGS, batchInput, command, NOT_ON_THE_COMMAND_LINE, plain } from './command.js'

export default command({
  schema: scenariosOptionsSchema,
  skip: NOT_ON_THE_COMMAND_LINE,
  extra: BATCH_FLAGS,
  prepare: batchInput,
  run: async (options) => plain(await compareScenarios(options)),
})
