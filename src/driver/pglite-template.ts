import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { type MemoryFS, PGlite } from '@electric-sql/pglite'
import type { PGliteDatabase } from '../core/database.js'
import { EMBEDDED_SHARED_BUFFERS } from '../core/defaults.js'

/**
 * Copies of an embedded database: its data directory read once as files, and what every PGlite
 * reads as it starts (its file-system bundle, its compiled WebAssembly) read once a process. A
 * copy writes the files straight into the new instance's memory as it starts, which PGlite takes
 * for a database to resume: no initdb, no tarball, no second read of the bundle, no second compile
 * (875 ms a copy by loadDataDir, about 210 ms this way, in ../shared/reference/speed-notes.md).
 *
 * The hook (MemoryFS.init's Emscripten preRun) and the resume path (PGDATA/PG_VERSION present at
 * start) are @electric-sql/pglite 0.5.17's internals, not its documented API: package.json pins
 * that version, and test/integration/embedded-copy.test.ts compares a copy's WAL with one made by
 * loadDataDir, byte for byte, so that an upgrade that changes them fails there.
 */
export interface DataDirFiles {
  /** The data directory's path inside the instance (PGDATA). */
  dataDir: string
  /** Its directories and files, parents first, as the instance left them. */
  entries: DataEntry[]
}

/** PGlite's classes, from the module the caller loaded (inside a jest sandbox or outside it). */
export interface PgliteModule {
  PGlite: typeof PGlite
  MemoryFS: typeof MemoryFS
}

interface DataEntry {
  /** Relative to the data directory. */
  path: string
  mode: number
  /** A file's bytes; undefined for a directory. Shared by every copy: written, never given to one. */
  contents?: Uint8Array
}

/** The Emscripten file system, by the members walcost uses (here, and to read WAL in place). */
interface EmscriptenFs {
  open(path: string, flags: string): unknown
  read(stream: unknown, buffer: Uint8Array, offset: number, length: number, position: number): number
  close(stream: unknown): void
  readdir(path: string): string[]
  stat(path: string): { mode: number }
  isDir(mode: number): boolean
  readFile(path: string): Uint8Array
  writeFile(path: string, data: Uint8Array): void
  mkdirTree(path: string, mode?: number): void
  chmod(path: string, mode: number): void
}

/** The Emscripten file system of a PGlite in this process; a PGliteWorker has none here. */
export function fileSystemOf(db: PGliteDatabase): EmscriptenFs | undefined {
  return (db as unknown as { Module?: { FS?: EmscriptenFs } }).Module?.FS
}

/** A WAL segment's file name: timeline, then the segment's number in two parts, 24 hex digits. */
const WAL_SEGMENT = /^pg_wal\/[0-9A-F]{24}$/

/** PGlite's start-up files, read once a process: null each where they could not be found (PGlite reads its own then). */
let startup: Promise<{ fsBundle: Blob | null; wasmModule: WebAssembly.Module | null }> | undefined

/**
 * The options that hand an instance the start-up files read once; none for a PGlite loaded outside
 * a jest sandbox (pgliteOutsideSandbox), which does not take a Blob made inside it for its own.
 */
async function startupOptions(
  pglite: PgliteModule,
): Promise<{ fsBundle?: Blob; pgliteWasmModule?: WebAssembly.Module }> {
  if (pglite.PGlite !== PGlite) return {}
  startup ??= startupFiles()
  const { fsBundle, wasmModule } = await startup
  return { ...(fsBundle && { fsBundle }), ...(wasmModule && { pgliteWasmModule: wasmModule }) }
}

/**
 * PGlite's file-system bundle and its compiled WebAssembly, from the installed package beside its
 * entry point.
 */
async function startupFiles(): Promise<{ fsBundle: Blob | null; wasmModule: WebAssembly.Module | null }> {
  let folder: string
  try {
    folder = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'))
  } catch {
    return { fsBundle: null, wasmModule: null }
  }
  const bundle = await readFile(join(folder, 'pglite.data')).catch(() => null)
  const wasm = await readFile(join(folder, 'pglite.wasm')).catch(() => null)
  return { fsBundle: bundle && new Blob([bundle]), wasmModule: wasm && (await WebAssembly.compile(wasm)) }
}

/**
 * A fresh instance with walcost's settings written to its postgresql.conf, its files read once,
 * closed: what every embedded session starts from.
 */
export async function makeEmbeddedTemplate(pglite: PgliteModule): Promise<DataDirFiles> {
  const db = await pglite.PGlite.create({
    postgresqlconf: [`shared_buffers = '${EMBEDDED_SHARED_BUFFERS}'`],
    ...(await startupOptions(pglite)),
  })
  try {
    return await readDataDir(db)
  } finally {
    await db.close()
  }
}

/**
 * An instance's data directory as it is now, read between statements. WAL segments past the one
 * holding the insert position are left out: they are pre-allocated for later (16 MiB each), and
 * PostgreSQL makes the next one when it needs it. Unwritten buffers are not in the files: a copy
 * replays the WAL since the last checkpoint as it starts, as one made by dumpDataDir does.
 */
export async function readDataDir(db: PGlite): Promise<DataDirFiles> {
  const [row] = (
    await db.query<{ dir: string; segment: string }>(
      `select current_setting('data_directory') as dir, pg_walfile_name(pg_current_wal_insert_lsn()) as segment`,
    )
  ).rows
  const dataDir = row?.dir as string
  const current = `pg_wal/${row?.segment}`
  // Walcost's own instances run in this process: their file system is here.
  const fs = fileSystemOf(db) as EmscriptenFs
  const entries: DataEntry[] = []
  const walk = (relative: string) => {
    for (const name of fs.readdir(relative === '' ? dataDir : `${dataDir}/${relative}`)) {
      if (name === '.' || name === '..') continue
      const path = relative === '' ? name : `${relative}/${name}`
      const { mode } = fs.stat(`${dataDir}/${path}`)
      if (fs.isDir(mode)) {
        entries.push({ path, mode })
        walk(path)
      } else if (!(WAL_SEGMENT.test(path) && path > current)) {
        entries.push({ path, mode, contents: fs.readFile(`${dataDir}/${path}`) })
      }
    }
  }
  walk('')
  return { dataDir, entries }
}

/** A new instance from `files`, which it resumes from as a database it had itself. */
export async function openCopy(pglite: PgliteModule, files: DataDirFiles): Promise<PGlite> {
  /** A MemoryFS whose data directory holds the files before PostgreSQL starts. */
  class CopyFS extends pglite.MemoryFS {
    override async init(pg: PGlite, emscriptenOptions: Parameters<MemoryFS['init']>[1]) {
      const { emscriptenOpts } = await super.init(pg, emscriptenOptions)
      const writeFiles = (module: { FS: EmscriptenFs }) => {
        module.FS.mkdirTree(files.dataDir)
        for (const { path, mode, contents } of files.entries) {
          const at = `${files.dataDir}/${path}`
          // Written, not handed over: the copy's file gets bytes of its own (MEMFS copies them).
          if (contents === undefined) module.FS.mkdirTree(at)
          else module.FS.writeFile(at, contents)
          module.FS.chmod(at, mode)
        }
      }
      return { emscriptenOpts: { ...emscriptenOpts, preRun: [...(emscriptenOpts.preRun ?? []), writeFiles] } }
    }
  }
  return pglite.PGlite.create({ fs: new CopyFS(), ...(await startupOptions(pglite)) })
}
