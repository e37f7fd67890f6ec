// A worker thread's entry: reads one stretch of segments (read-stretch.ts) and posts what it held,
// or the failure as plain data (a WalcostError does not cross threads as itself).
import { parentPort, workerData } from 'node:worker_threads'
import { WalcostError } from '../core/errors.js'
import { readStretch, type StretchJob } from './read-stretch.js'

readStretch(workerData as StretchJob).then(
  (result) => parentPort?.postMessage({ result }),
  (error: unknown) =>
    parentPort?.postMessage({
      failure:
        error instanceof WalcostError
          ? { code: error.code, message: error.message, file: error.file, lsn: error.lsn }
          : { code: null, message: error instanceof Error ? (error.stack ?? error.message) : String(error) },
    }),
)
