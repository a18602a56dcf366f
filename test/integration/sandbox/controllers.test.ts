import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '@aro/kube';
import { processExists, testKubeConfig, waitFor } from '../../harness';
import { ControllerReplicas, RESTART_DELAY_MS } from '../../sandbox/controllers';
import { madeForScaleSet } from '../../sandbox/observe';

// A stand-in for apps/controller: answers /healthz on PROBE_PORT until killed.
const FAKE_CONTROLLER = `
require('node:http').createServer((req, res) => res.end('ok')).listen(Number(process.env.PROBE_PORT), '127.0.0.1');
`;

/*
 * `npm run sandbox -- --keep` driven from outside: a person's `kill -9` of a controller replica used to
 * leave it dead (only --chaos restarted the replica it had killed itself). Every replica is supervised
 * now, as its Deployment would: whatever ended it, it is started again RESTART_DELAY_MS later.
 */
describe('the sandbox controller replicas', () => {
  let dir: string;
  let replicas: ControllerReplicas | undefined;
  const kube = new KubeClient(testKubeConfig());
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'aro-sandbox-replicas-'));
    writeFileSync(join(dir, 'fake-controller.js'), FAKE_CONTROLLER);
  });
  afterEach(async () => {
    await replicas?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  afterAll(() => kube.close());

  it('starts a replica killed with -9 from outside again, after the delay, under a new pid', async () => {
    replicas = new ControllerReplicas({
      container: { name: 'manager', env: [] },
      namespace: 'arc-systems',
      serviceAccountName: 'aro-controller',
      kubeconfigPath: '/dev/null',
      logDir: dir,
      pidFile: join(dir, 'pids'),
      kube,
      replicas: 2,
      main: join(dir, 'fake-controller.js'),
    });
    await replicas.start(60_000);
    const [first, second] = replicas.replicas;
    const killedPid = first.process.pid;
    process.kill(killedPid, 'SIGKILL'); // a person's kill -9, not the sandbox's own
    await waitFor(() => !processExists(killedPid), { description: 'the replica to die', timeoutMs: 10_000 });
    // Not at once: a Deployment's pod comes back after a moment, and the standby must see the lapse.
    expect(await replicas.restartExited()).toEqual([]);
    const restarted = await waitFor(
      async () => {
        const done = await replicas?.restartExited();
        return done && done.length > 0 ? done : undefined;
      },
      { description: 'the replica to be restarted', timeoutMs: RESTART_DELAY_MS + 10_000, intervalMs: 250 },
    );
    expect(restarted.map((r) => r.name)).toEqual([first.name]);
    expect(first.process.pid).not.toBe(killedPid);
    expect(first.process.running).toBe(true);
    expect(first.starts).toBe(2);
    expect(second.starts).toBe(1);
  });
});

describe('what the sandbox counts as left', () => {
  const chart = ['Secret/sandbox-aro-rs-github-secret'];
  const owned = (kind: string, name: string) => ({
    metadata: {
      name: 'x',
      ownerReferences: [{ apiVersion: 'actions.github.com/v1alpha1', kind, name, uid: 'u' }],
    },
  });

  it("counts the chart's objects and what the product made for the scale set, not what a person added", () => {
    expect(
      madeForScaleSet(
        { kind: 'Secret', metadata: { name: 'sandbox-aro-rs-github-secret' } },
        'sandbox',
        chart,
      ),
    ).toBe(true);
    expect(madeForScaleSet(owned('EphemeralRunner', 'sandbox-abcde-runner-xyz'), 'sandbox', chart)).toBe(
      true,
    );
    expect(madeForScaleSet(owned('AutoscalingListener', 'sandbox-1234-listener'), 'sandbox', chart)).toBe(
      true,
    );
    expect(
      madeForScaleSet(
        { metadata: { name: 'p', labels: { 'actions.github.com/scale-set-name': 'sandbox' } } },
        'sandbox',
        chart,
      ),
    ).toBe(true);
    // examples/manifests: a secret of the person's, a lone runner and a set of their own.
    expect(
      madeForScaleSet({ kind: 'Secret', metadata: { name: 'example-github-config' } }, 'sandbox', chart),
    ).toBe(false);
    expect(madeForScaleSet(owned('EphemeralRunner', 'example-runner'), 'sandbox', chart)).toBe(false);
    expect(madeForScaleSet(owned('AutoscalingListener', 'example-5678-listener'), 'sandbox', chart)).toBe(
      false,
    );
    expect(madeForScaleSet({ kind: 'Pod', metadata: { name: 'debug-shell' } }, 'sandbox', chart)).toBe(false);
  });
});
