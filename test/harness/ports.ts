import { createServer } from 'node:net';

/** Distinct free loopback ports. Racy by nature (another process may take one first): start retries. */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    if (address === null || typeof address === 'string') {
      throw new Error('A loopback listener has no port');
    }
    return address.port;
  });
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

/** One free loopback port (racy as above: a caller that binds it must fail loudly on a taken one). */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port;
}
