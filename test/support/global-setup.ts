import type { TestProject } from 'vitest/node'
import { startPostgres } from './postgres-server.js'
import { selectedBackends } from './selected-backends.js'

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

/** One real PostgreSQL for the whole run; test files take turns on it (WAL is cluster-wide). */
export default async function setup(project: TestProject) {
  if (!selectedBackends().includes('postgres')) return
  const server = await startPostgres()
  project.provide('postgresUrl', server.url)
  return async () => {
    await server.stop()
  }
}
