import { appendFile } from 'node:fs/promises'
import {
  checkCommandSchema,
  checkMarkdown,
  formatCheck,
  loadCheckConfig,
  recordBaselines,
  runCheck,
} from '../ci/check.js'

import { command, connection, connectionUrl, json } from './command.js'

export default command({
  schema: checkCommandSchema,
  skip: [],
  extra: [connection, json],
  // The connection goes to runCheck beside the options, which name only the config.
  prepare: async ({ db: _unused, ...rest }) => rest,
  async run(options, values) {
    const loaded = await loadCheckConfig(options.config)
    const report = await runCheck(
      loaded,
      typeof values.url === 'string' ? connectionUrl(values.url) : connectionUrl(undefined),
    )
    if (options.update) {
      await recordBaselines(loaded, report)
      const names = Object.keys(report.summaries).join(', ')
      return { json: report, text: `walcost check: recorded baselines of ${names} in ${loaded.path}.`, exitCode: 0 }
    }
    const markdown = checkMarkdown(report)
    // On GitHub Actions the job's summary page shows the same table as a pull-request comment would.
    if (process.env.GITHUB_STEP_SUMMARY) await appendFile(process.env.GITHUB_STEP_SUMMARY, markdown)
    return { json: report, text: options.markdown ? markdown : formatCheck(report), exitCode: report.pass ? 0 : 1 }
  },
})
