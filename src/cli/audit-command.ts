import { auditIndexes, auditOptionsSchema } from '../compare/audit.js'
import { BATCH_FLAGS, batchInput, command, NOT_ON_THE_COMMAND_LINE, option, plain } from './command.js'
import { millisecondsFlag } from './command-line.js'

export default command({
  schema: auditOptionsSchema,
  skip: NOT_ON_THE_COMMAND_LINE,
  extra: [
    ...BATCH_FLAGS,
    option(
      'traffic-seconds',
      "--traffic-seconds N\n      first observe the server's own traffic for N seconds: each index's WAL and scans over that window, and the verdicts judged on them",
    ),
  ],
  async prepare(input, values) {
    const batch = await batchInput(input, values)
    const durationMs = millisecondsFlag(values, 'traffic-seconds')
    if (durationMs === undefined) return batch
    return { ...batch, traffic: { durationMs } }
  },
  run: async (options) => plain(await auditIndexes(options)),
})
