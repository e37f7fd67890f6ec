import { createConnection, createServer, type Server, type Socket } from 'node:net'

/**
 * A stand-in for a connection pooler that refuses replication connections, as PgBouncer before
 * 1.23 does: it forwards every connection to `port` but one whose startup message asks for
 * replication, which gets PgBouncer's FATAL error. Returns its port and how to close it.
 */
export async function startRefusingPooler(port: number): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    sockets.add(client)
    client.once('close', () => sockets.delete(client))
    let buffered = Buffer.alloc(0)
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk])
      if (buffered.length < 8) return
      const length = buffered.readInt32BE(0)
      if (buffered.length < length) return
      // An SSLRequest (80877103) is answered "no" before the startup message comes.
      if (length === 8 && buffered.readInt32BE(4) === 80_877_103) {
        buffered = buffered.subarray(8)
        client.write('N')
        return
      }
      client.off('data', onData)
      const parameters = buffered.subarray(8, length).toString('utf8').split('\0')
      if (parameters.includes('replication')) {
        client.end(errorResponse('unsupported startup parameter: replication'))
        return
      }
      const upstream = createConnection({ host: '127.0.0.1', port })
      sockets.add(upstream)
      upstream.once('close', () => sockets.delete(upstream))
      upstream.write(buffered)
      client.pipe(upstream).pipe(client)
      upstream.once('error', () => client.destroy())
      client.once('error', () => upstream.destroy())
    }
    client.on('data', onData)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A FATAL ErrorResponse with `message`, as the protocol frames it. */
function errorResponse(message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C08P01\0M${message}\0\0`, 'utf8')
  const header = Buffer.alloc(5)
  header.write('E', 0)
  header.writeInt32BE(fields.length + 4, 1)
  return Buffer.concat([header, fields])
}
