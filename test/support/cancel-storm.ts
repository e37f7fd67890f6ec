import pg from 'pg'
import { sqlStateOf } from '../../src/core/errors.js'

/**
 * A cancel made to land inside a chosen step of a call. A cancel that reaches an idle backend is
 * dropped by the server, and most of walcost's statements take well under a millisecond, so one
 * pg_cancel_backend at a chosen moment lands by chance. Here the statements walcost sends are seen
 * as they go (on the caller's Client, or on every client of the caller's Pool), and from the first
 * one of the chosen step on, walcost's backends are cancelled again and again until the server
 * cancels one of its statements (SQLSTATE 57014): the cancel lands in that step or within a
 * statement or two of its start. Nothing of PostgreSQL is stood in for: the statements, the
 * cancels and the errors are the server's own.
 */
export interface CancelStorm {
  /** The steps of a call, in the order it first ran them: one key per kind of statement. */
  readonly steps: string[]
  /** Arms the storm: it starts as the first statement of `step` is sent. */
  arm(step: string): void
  /** Whether the server cancelled a statement of walcost's since the storm was armed. */
  readonly landed: boolean
  /** The statement the server cancelled. */
  readonly cancelledStep: string | undefined
  /** Waits for the storm's side connection to go quiet; call after the call under test settles. */
  settle(): Promise<void>
  close(): Promise<void>
}

/**
 * A statement's kind: its text with names of walcost's own making, numbers, literals and spacing
 * folded, so that runs of one call give the same keys.
 */
export function stepOf(text: string): string {
  return text
    .replace(/walcost_(scratch|rollback|measure)?_?[0-9a-f]{6,}\w*/g, 'walcost_$1')
    .replace(/'[^']*'/g, "'?'")
    .replace(/\b\d+\b/g, 'N')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 90)
}

export async function cancelStorm(url: string): Promise<CancelStorm & { watch(client: pg.Client): void }> {
  const side = new pg.Client({ connectionString: url })
  await side.connect()
  const watched = new Set<pg.Client>()
  const steps: string[] = []
  let armedStep: string | undefined
  let storming: Promise<void> | null = null
  let landed = false
  let cancelledStep: string | undefined
  let stopped = false

  const storm = async () => {
    // Bounded: 20,000 rounds is minutes; a call settles long before.
    for (let round = 0; round < 20_000 && !landed && !stopped; round++) {
      const pids = [...watched].map((client) => (client as unknown as { processID: number }).processID)
      await side.query('select pg_cancel_backend(pid) from unnest($1::int4[]) pid', [pids])
    }
  }

  const watch = (client: pg.Client) => {
    if (watched.has(client)) return
    watched.add(client)
    const send = client.query.bind(client) as (...args: unknown[]) => unknown
    ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first] = args
      const text =
        typeof first === 'string'
          ? first
          : typeof (first as { text?: unknown })?.text === 'string'
            ? (first as { text: string }).text
            : undefined
      const step = text === undefined ? undefined : stepOf(text)
      if (step !== undefined && !steps.includes(step)) steps.push(step)
      const sent = send(...args)
      if (step !== undefined && armedStep === step && storming === null) storming = storm()
      const seen = (error: unknown) => {
        if (storming !== null && !landed && sqlStateOf(error) === '57014') {
          landed = true
          cancelledStep = step
        }
      }
      // A statement's promise; a COPY FROM's stream (pg-copy-streams), its 'error'; a COPY TO, its handleError.
      if (typeof (sent as Promise<unknown>)?.then === 'function') (sent as Promise<unknown>).then(undefined, seen)
      else if (typeof (sent as { on?: unknown })?.on === 'function') (sent as NodeJS.EventEmitter).on('error', seen)
      else if (typeof (sent as { handleError?: unknown })?.handleError === 'function') {
        const submitted = sent as { handleError(error: unknown): void }
        const handle = submitted.handleError.bind(submitted)
        submitted.handleError = (error) => {
          seen(error)
          handle(error)
        }
      }
      return sent
    }
  }

  return {
    steps,
    watch,
    arm(step) {
      armedStep = step
      storming = null
      landed = false
      cancelledStep = undefined
    },
    get landed() {
      return landed
    },
    get cancelledStep() {
      return cancelledStep
    },
    async settle() {
      stopped = true
      await storming
      stopped = false
      armedStep = undefined
    },
    async close() {
      stopped = true
      await storming
      await side.end()
    },
  }
}
