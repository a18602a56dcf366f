import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { KubeObject } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import { validateListenerConfig } from './config';
import type { PatchClient } from './scaler';
import { ScaleSetListener } from './scale-set-listener';

const noKube: PatchClient = {
  mergePatch: <T extends KubeObject>() => Promise.resolve({} as T),
  mergePatchStatus: <T extends KubeObject>() => Promise.resolve({} as T),
};

describe('ScaleSetListener', () => {
  let server: Server;
  let seen: IncomingHttpHeaders[];
  let port: number;

  beforeEach(async () => {
    seen = [];
    // GitHub as far as the first call: record the request, refuse it (the listener backs off).
    server = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"message":"down"}');
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise((done) => server.close(done));
  });

  it('names itself to GitHub with ARO’s User-Agent once, followed by the component', async () => {
    const listener = new ScaleSetListener({
      config: validateListenerConfig({
        configure_url: `http://127.0.0.1:${port}/octo`,
        github_token: 'ghp_test',
        ephemeral_runner_set_namespace: 'ns',
        ephemeral_runner_set_name: 'set',
        min_runners: 0,
        max_runners: 1,
        runner_scale_set_id: 1,
      }),
      logger: silentLogger,
      registry: new Registry(),
      kubeConfig: { getCurrentCluster: () => null } as never,
      kube: { scaling: noKube, bookkeeping: noKube },
      tuning: { maxRetries: 0 },
    });
    listener.start();
    try {
      for (let i = 0; i < 100 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await listener.stop();
    }
    const agent = seen[0]?.['user-agent'] ?? '';
    expect(agent.match(/ARO\//g)).toHaveLength(1);
    expect(agent).toMatch(/^ARO\/\S+ \(actions-runner-operator; node v[\d.]+\) listener$/);
  });
});
