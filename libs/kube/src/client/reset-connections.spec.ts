import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { ConfigMapKind } from './kinds';
import { KubeClient } from './kube-client';

describe('KubeClient.resetConnections', () => {
  it('ends its keep-alive connections with a TCP reset, not a close, and the client keeps working', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns' } }),
      );
    });
    server.on('connection', (socket: Socket) => {
      socket.on('error', (e: NodeJS.ErrnoException) => seen.push(e.code ?? e.message));
      socket.on('end', () => seen.push('end'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const kc = new KubeConfig();
    kc.loadFromClusterAndUser(
      {
        name: 's',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
      { name: 'u' },
    );
    const client = new KubeClient(kc, { registry: new Registry() });
    try {
      await client.get(ConfigMapKind, 'ns', 'c');
      expect(client.resetConnections()).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      // A reset is ECONNRESET on the other side; a close (FIN) would be a clean 'end'.
      expect(seen).toEqual(['ECONNRESET']);
      expect((await client.get(ConfigMapKind, 'ns', 'c')).metadata?.name).toBe('c');
    } finally {
      client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
