import type { Command } from './command.js'

// Every command: its line of help, and its module, loaded only when the command runs: `walcost
// --help` and `--version` load none of them, and a command loads only what it uses.

/** A command as the dispatcher knows it before loading it. */
export interface CommandEntry {
  summary: string
  load: () => Promise<{ default: Command }>
}

export const COMMANDS: Record<string, CommandEntry> = {
  demo: {
    summary: "the field notes' experiment: 100,000 rows into a table of 500,000 with three indexes, in every scenario",
    load: () => import('./demo-command.js'),
  },
  measure: {
    summary:
      'measure one batch (inserts; or --update-rows, --delete-rows, --upsert-rows, or --sql with any writes): WAL per row, split into heap, each index, full-page images and the rest, with HOT explained for updates',
    load: () => import('./measure-command.js'),
  },
  compare: {
    summary:
      'the same batch after a CHECKPOINT, in steady state, without indexes and without each index: what each part costs',
    load: () => import('./compare-command.js'),
  },
  'compare-writes': {
    summary:
      'a write batch (--update-rows, --delete-rows, --upsert-rows or --sql) from identical starting states after a CHECKPOINT: as given, without each index, at fillfactor 100, 90 and 70',
    load: () => import('./compare-writes-command.js'),
  },
  remedies: {
    summary:
      'the four remedies (batching, dropping unused indexes, wal_compression, fewer checkpoints) measured side by side',
    load: () => import('./remedies-command.js'),
  },
  predict: {
    summary: "predict WAL per row from the table's definition (catalog and statistics only: nothing is written)",
    load: () => import('./predict-command.js'),
  },
  ceiling: {
    summary: 'the ingest rate a storage sustains at a WAL cost per row, and which limit binds first',
    load: () => import('./ceiling-command.js'),
  },
  migration: {
    summary:
      'the batch before and after a migration (applied inside the measuring transaction, rolled back): what it adds a row, by relation',
    load: () => import('./migration-command.js'),
  },
  check: {
    summary:
      'run the measurements named in walcost.config.json (or package.json "walcost"): fail when one is over its budget or grew past the recorded baseline',
    load: () => import('./check-command.js'),
  },
  observe: {
    summary:
      'the WAL of everything the server writes while a command runs (or for --seconds N), from every session: which tables and indexes it came from',
    load: () => import('./observe-command.js'),
  },
  inspect: {
    summary:
      'which tables and indexes WAL segment files wrote, read from disk with no server needed: an archive (pgBackRest, barman, WAL-G, a folder) or a copy of pg_wal; plain, gzip, lz4, zstd, bzip2, brotli',
    load: () => import('./inspect-command.js'),
  },
  top: {
    summary:
      'a live view of the WAL the server writes, interval by interval: WAL per second by table and index, its share, image share and records per second, with totals since start (Ctrl-C ends it)',
    load: () => import('./top-command.js'),
  },
  exporter: {
    summary:
      "serves the server's WAL by table and index to Prometheus at /metrics, following it across lost connections and restarts (SIGINT or SIGTERM ends it)",
    load: () => import('./exporter-command.js'),
  },
  audit: {
    summary: "each index's write cost (measured on a scratch copy, rolled back) against how often it is scanned",
    load: () => import('./audit-command.js'),
  },
}
