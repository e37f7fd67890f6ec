import { compareRemedies, remediesOptionsSchema } from '../compare/remedies.js'
import { BATCH_FLAGS, batchInput, command, NOT_ON_THE_COMMAND_LINE, plain, repeated } from './command.js'

export default command({
  schema: remediesOptionsSchema,
  skip: [...NOT_ON_THE_COMMAND_LINE, 'batchSizes', 'compression'],
  extra: [
    ...BATCH_FLAGS,
    repeated(
      'drop-index',
      '--drop-index NAME\n      try without this index (default: those never scanned that back no constraint); repeat for more',
    ),
  ],
  async prepare(input, values) {
    const dropIndexes = Array.isArray(values['drop-index']) ? { dropIndexes: values['drop-index'] } : {}
    return { ...(await batchInput(input, values)), ...dropIndexes }
  },
  run: async (options) => plain(await compareRemedies(options)),
})
