import type { createRequire } from 'node:module'
import { runInThisContext } from 'node:vm'
import { MemoryFS, PGlite } from '@electric-sql/pglite'
import type { PGliteDatabase } from '../core/database.js'
import { COPY_BLOB_BYTES } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { keepingFirstFailure } from './first-failure.js'
import { keptByWalcost, lend, type Savepoints } from './lend.js'
import {
  type DataDirFiles,
  fileSystemOf,
  makeEmbeddedTemplate,
  openCopy,
  type PgliteModule,
  readDataDir,
} from './pglite-template.js'
import type { Session } from './types.js'

/**
 * A newly initialised embedded database's data directory, made once for the process: every embedded
 * session starts from a copy of it, which takes a fraction of initdb's time, and then runs its own
 * setup. Its last checkpoint (the one a copy takes as it opens) precedes the setup, as initdb's
 * does for a database made afresh, so the setup's pages are as dirty as they would be there.
 */
let template: Promise<DataDirFiles> | undefined

/** A fresh in-memory PGlite (PostgreSQL in WASM); walcost reads its WAL from its own files. */
export async function openEmbeddedSession(): Promise<Session> {
  const pglite = (await dynamicImportWorks()) ? { PGlite, MemoryFS } : pgliteOutsideSandbox()
  template ??= makeEmbeddedTemplate(pglite)
  const made = template
  // One that failed is not kept: the next session tries again and says why.
  made.catch(() => {
    if (template === made) template = undefined
  })
  return pgliteSession(await openCopy(pglite, await made), pglite)
}

/** Node's codes for an import() in a vm context that cannot run one (jest without --experimental-vm-modules). */
const VM_IMPORT_ERRORS = new Set([
  'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING',
  'ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING_FLAG',
])

/**
 * PGlite loads Node built-ins with import() as it starts. jest runs a project's modules in a vm
 * context where import() rejects unless Node runs with --experimental-vm-modules (and PGlite then
 * leaves one of its own promises rejected and unhandled, which kills the jest process). One
 * import() of our own first tells whether this context can.
 */
async function dynamicImportWorks(): Promise<boolean> {
  try {
    await import('node:module')
    return true
  } catch (error) {
    const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined
    return !(typeof code === 'string' && VM_IMPORT_ERRORS.has(code))
  }
}

/**
 * PGlite loaded by Node's own module loader rather than the sandbox's, so that its import() calls
 * run outside the sandbox. The sandbox gives its modules a `require` and a node:module of its own;
 * the process's real one is reached through the context the sandbox runs in (vm.runInThisContext),
 * whose main module (jest's own entry, CommonJS) has Node's Module class.
 */
function pgliteOutsideSandbox(): PgliteModule {
  const outer = runInThisContext('process') as NodeJS.Process
  const Module = outer.mainModule?.constructor as { createRequire?: typeof createRequire } | undefined
  if (!Module?.createRequire) {
    throw new WalcostError(
      'CONNECTION_FAILED',
      'the embedded PGlite cannot start: it loads Node built-ins with import(), which this module sandbox refuses, and walcost found no module loader outside it. Under jest, run it as `NODE_OPTIONS=--experimental-vm-modules npx jest`, or pass db (a connection string, pg Client or Pool); nothing was measured.',
    )
  }
  // Resolved from walcost's own file, where its dependency is installed.
  const from = typeof __filename === 'string' ? __filename : `${process.cwd()}/`
  const { PGlite: Outside, MemoryFS: OutsideMemoryFS } = Module.createRequire(from)(
    '@electric-sql/pglite',
  ) as PgliteModule
  return { PGlite: Outside, MemoryFS: OutsideMemoryFS }
}

/**
 * A session on a PGlite; `embedded`: walcost's own, a copy of its template, and the classes it was
 * made with, for copies of it.
 */
export function pgliteSession(db: PGliteDatabase, embedded?: PgliteModule): Session {
  const fs = fileSystemOf(db)
  let files: Promise<DataDirFiles> | undefined
  const statements = keepingFirstFailure()
  return {
    ...(fs && {
      // The data directory lives in this process: a WAL segment is read in place, in milliseconds.
      readDataFile(path: string, offset: number, into: Uint8Array) {
        const stream = fs.open(path, 'r')
        try {
          return into.subarray(0, fs.read(stream, into, 0, into.length, offset))
        } finally {
          fs.close(stream)
        }
      },
    }),
    ...('clone' in db &&
      typeof db.clone === 'function' && {
        // PGlite's own clone keeps a caller's instance's extensions. Walcost's own has none, and its
        // data directory is dumped once for all the clones, which all start from the same pages.
        clone: embedded
          ? async () => {
              files ??= readDataDir(db as PGlite)
              return pgliteSession(await openCopy(embedded, await files), embedded)
            }
          : async () => pgliteSession(await (db as PGlite).clone(), { PGlite, MemoryFS }),
      }),
    backend: 'pglite',
    embedded: embedded !== undefined,
    async query<Row extends Record<string, unknown>>(sql: string, params: readonly unknown[] = []) {
      return statements.run(async () => (await db.query<Row>(sql, [...params])).rows)
    },
    async exec(sql) {
      await statements.run(() => db.exec(sql))
    },
    // The instance itself, so that drizzle-orm/pglite and code written for PGlite take it as it is.
    lend: (beforeSavepointEnds) =>
      lend(
        db,
        {
          query: ['query', 'exec', 'sql'],
          refused: ['close'],
          own: { transaction: savepointTransaction, release: keptByWalcost },
        },
        beforeSavepointEnds,
        statements,
      ),
    // PGlite reads COPY input from a Blob at '/dev/blob'. A Blob is held whole in memory, so the
    // input is sent as a run of COPY statements of at most COPY_BLOB_BYTES each.
    async copyIn(copySql, chunks) {
      const copyStatement = copySql.replace(/\bSTDIN\b/i, `'/dev/blob'`)
      let pending: string[] = []
      let pendingBytes = 0
      const flush = async () => {
        if (pending.length === 0) return
        await statements.run(() => db.query(copyStatement, [], { blob: new Blob(pending) }))
        pending = []
        pendingBytes = 0
      }
      for await (const chunk of chunks) {
        pending.push(chunk)
        pendingBytes += chunk.length
        if (pendingBytes >= COPY_BLOB_BYTES) await flush()
      }
      await flush()
    },
    async close() {
      if (embedded && !db.closed) await db.close()
    },
  }
}

type TransactionCallback = (transaction: Record<string, unknown>) => Promise<unknown>

/**
 * PGlite's transaction(), on a savepoint of walcost's transaction: its callback gets the lent
 * handle's query, sql and exec, and a rollback() that rolls back to the savepoint.
 */
function savepointTransaction(handle: unknown, savepoints: Savepoints) {
  const { query, sql, exec } = handle as Record<string, unknown>
  return async (callback: TransactionCallback) => {
    await savepoints.begin()
    let ended = false
    const end = async (outcome: 'commit' | 'rollback') => {
      if (ended) return
      ended = true
      await savepoints.end(outcome)
    }
    try {
      const result = await callback({ query, sql, exec, rollback: () => end('rollback'), closed: false })
      await end('commit')
      return result
    } catch (error) {
      await end('rollback')
      throw error
    }
  }
}
