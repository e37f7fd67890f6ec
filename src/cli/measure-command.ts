import { checkWalBudget } from '../ci/budget.js'
import { measureInsertCost } from '../measure/measure.js'
import { measureWriteCost, writeOptionsSchema } from '../measure/write.js'
import { formatResult } from '../report/text.js'
import {
  BATCH_FLAGS,
  batchInput,
  budgetFlags,
  budgetFrom,
  command,
  NOT_ON_THE_COMMAND_LINE,
  option,
  plain,
  repeated,
  suggested,
  suggestFlags,
  WRITE_FLAGS,
  writeBatch,
} from './command.js'

export default command({
  schema: writeOptionsSchema,
  skip: NOT_ON_THE_COMMAND_LINE,
  extra: [
    ...BATCH_FLAGS,
    option(
      'drop-indexes',
      '--drop-indexes\n      drop every index of the table for the batch (restored by the rollback)',
      'boolean',
    ),
    repeated('drop-index', '--drop-index NAME\n      drop this index for the batch; repeat for more'),
    ...budgetFlags.map((flag) => option(flag.flag, flag.help)),
    repeated('budget-index', '--budget-index NAME=N\n      WAL bytes per row allowed for one index; repeat for more'),
    option(
      'suggest-budget',
      '--suggest-budget\n      print a budget for this batch: bytes per row and each index, with --headroom over what was measured',
      'boolean',
    ),
    ...suggestFlags.map((flag) => option(flag.flag, flag.help)),
    ...WRITE_FLAGS,
  ],
  async prepare(input, values) {
    const dropIndexes = Array.isArray(values['drop-index']) ? values['drop-index'] : values['drop-indexes'] === true
    return { ...(await batchInput(input, values)), dropIndexes, ...writeBatch(values) }
  },
  async run(options, values) {
    const budget = budgetFrom(values)
    // Updates and deletes get HOT explained and their deferred VACUUM; inserts keep their result.
    const writes =
      options.update ||
      options.delete ||
      options.upsert ||
      /\b(update|delete|merge|on\s+conflict)\b/i.test(typeof options.sql === 'string' ? options.sql : '')
    const cost = writes ? await measureWriteCost(options) : await measureInsertCost(options)
    if (values['suggest-budget'] === true) return suggested(cost, values)
    if (!budget) return plain(cost)
    const check = checkWalBudget(cost, budget)
    return {
      json: { ...cost, budget: check },
      result: cost,
      text: `${formatResult(cost)}\n\n${check.message}`,
      exitCode: check.pass ? 0 : 1,
    }
  },
})
