/**
 * The backends a run of the integration tier covers: `WALCOST_BACKENDS=pglite npm test` runs the
 * PGlite half without starting PostgreSQL 18 (and `postgres` the other half). Read by the global
 * setup, in vitest's main process, and by the test files, which inherit its environment.
 */
export const backendNames = ['pglite', 'postgres'] as const
export type BackendName = (typeof backendNames)[number]

export function selectedBackends(value = process.env.WALCOST_BACKENDS): BackendName[] {
  if (value === undefined || value.trim() === '') return [...backendNames]
  const names = value.split(',').map((name) => name.trim())
  const unknown = names.filter((name) => !(backendNames as readonly string[]).includes(name))
  if (unknown.length > 0) {
    throw new Error(
      `WALCOST_BACKENDS names ${unknown.join(', ')}: give a comma-separated list of ${backendNames.join(', ')}`,
    )
  }
  return names as BackendName[]
}
