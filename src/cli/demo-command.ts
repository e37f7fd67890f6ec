import { fieldNotesExperiment, fieldNotesOptionsSchema } from '../compare/field-notes.js'
import { WalcostError } from '../core/errors.js'
import { command, connection, html, json, plain, vega } from './command.js'

export default command({
  schema: fieldNotesOptionsSchema,
  skip: ['db', 'signal'],
  extra: [connection, json, vega, html],
  async run(options) {
    // Ctrl-C stops the demo, which drops the schema it created; a second one quits at once.
    const stop = new AbortController()
    const onSigint = () => {
      process.stderr.write('walcost demo: interrupted; rolling back and dropping what the demo created...\n')
      process.once('SIGINT', () => process.exit(130))
      stop.abort()
    }
    process.once('SIGINT', onSigint)
    try {
      return plain(await fieldNotesExperiment({ ...options, signal: stop.signal }))
    } catch (error) {
      if (!(stop.signal.aborted && error instanceof WalcostError && error.code === 'ABORTED')) throw error
      process.stderr.write(`walcost demo: ${error.message}\n`)
      return { json: undefined, text: undefined, exitCode: 130 }
    } finally {
      process.removeListener('SIGINT', onSigint)
    }
  },
})
