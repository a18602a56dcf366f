import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  ConfigMapKind,
  ControllerBuilder,
  LeaseKind,
  done,
  resourceVersionChangedPredicate,
  type KubeClient,
  type Lease,
  type LeaderElectionOptions,
  type Reconciler,
} from '@aro/kube';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import {
  CuttableProxy,
  adminClient,
  apiServerUrl,
  createConfigMap,
  metricValue,
  newRuntime,
  type Runtime,
} from './support';

/*
 * Two replicas of a manager against the real API server, each running one controller that stamps the
 * ConfigMaps it reconciles with an annotation naming the replica. Which annotations appear shows which
 * replica did the work: only the leader's may.
 */

const fastTimings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };

/** Writes `aro.test/reconciled-by-<replica>: <identity>` on each ConfigMap it reconciles, once. */
function stampingReconciler(
  client: KubeClient,
  replica: string,
  identity: () => string | undefined,
): Reconciler {
  return {
    async reconcile(req) {
      const annotation = `aro.test/reconciled-by-${replica}`;
      const current = await client
        .get<V1ConfigMap>(ConfigMapKind, req.namespace, req.name)
        .catch(() => undefined);
      if (current === undefined || current.metadata?.annotations?.[annotation]) return done;
      await client.mergePatch(ConfigMapKind, req.namespace, req.name, {
        metadata: { annotations: { [annotation]: identity() } },
      });
      return done;
    },
  };
}

function replica(
  name: string,
  namespace: string,
  election: Omit<LeaderElectionOptions, 'leaseNamespace'>,
  viaProxy?: CuttableProxy,
): Runtime {
  const kubeConfig = viaProxy ? viaProxy.kubeConfig(testKubeConfig()) : testKubeConfig();
  const runtime = newRuntime(kubeConfig, namespace, {
    ...election,
    leaseNamespace: namespace,
    identity: undefined,
  });
  new ControllerBuilder(runtime.manager, 'stamper')
    .for(ConfigMapKind)
    .withEventFilter(resourceVersionChangedPredicate)
    .complete(stampingReconciler(runtime.client, name, () => runtime.manager.identity));
  return runtime;
}

async function stampsOn(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Record<string, string>> {
  const cm = await client.get<V1ConfigMap>(ConfigMapKind, namespace, name);
  return Object.fromEntries(
    Object.entries(cm.metadata?.annotations ?? {}).filter(([k]) => k.startsWith('aro.test/reconciled-by-')),
  );
}

async function lease(client: KubeClient, namespace: string, name: string): Promise<Lease> {
  return client.get<Lease>(LeaseKind, namespace, name);
}

describe('leader election between two managers', () => {
  const running: Runtime[] = [];
  const proxies: CuttableProxy[] = [];
  let admin: KubeClient;

  beforeAll(() => {
    admin = adminClient();
  });

  afterEach(async () => {
    for (const p of proxies.splice(0)) p.cut();
    await Promise.all(running.splice(0).map((r) => r.stop()));
  });

  afterAll(() => admin.close());

  it('lets exactly one lead, and only the leader reconciles', async () => {
    const ns = await createTestNamespace('le-one-leader');
    const a = replica('a', ns, { leaseName: 'stamper', ...fastTimings });
    const b = replica('b', ns, { leaseName: 'stamper', ...fastTimings });
    running.push(a, b);
    await Promise.all([a.manager.start(), b.manager.start()]);
    await Promise.race([a.manager.elected(), b.manager.elected()]);

    const [leader, standby] = a.manager.isLeader() ? [a, b] : [b, a];
    const leaderName = leader === a ? 'a' : 'b';
    expect(standby.manager.isLeader()).toBe(false);
    expect(standby.manager.isReady()).toBe(true);
    const held = await lease(admin, ns, 'stamper');
    expect(held.spec?.holderIdentity).toBe(leader.manager.identity);
    expect(held.spec?.leaseDurationSeconds).toBe(3);
    expect(held.spec?.renewTime).toMatch(/\.\d{6}Z$/);

    const names = ['one', 'two', 'three', 'four', 'five'];
    for (const n of names) await createConfigMap(admin, ns, n);
    for (const n of names) {
      const stamps = await waitFor(
        async () => {
          const s = await stampsOn(admin, ns, n);
          return Object.keys(s).length > 0 ? s : undefined;
        },
        { description: `ConfigMap ${ns}/${n} to be stamped by a controller` },
      );
      expect(stamps).toEqual({ [`aro.test/reconciled-by-${leaderName}`]: leader.manager.identity });
    }
    expect(
      await metricValue(standby.registry, 'controller_runtime_reconcile_total', { result: 'success' }),
    ).toBe(0);
    expect(await metricValue(leader.registry, 'leader_election_master_status', { name: 'stamper' })).toBe(1);
    expect(await metricValue(standby.registry, 'leader_election_master_status', { name: 'stamper' })).toBe(0);
  });

  it('moves leadership to the standby when the leader is cut off from the API server', async () => {
    const ns = await createTestNamespace('le-partition');
    const proxy = new CuttableProxy(apiServerUrl());
    await proxy.start();
    proxies.push(proxy);
    // The first replica talks through the proxy and starts alone, so it is the one that leads.
    const a = replica('a', ns, { leaseName: 'stamper', ...fastTimings }, proxy);
    running.push(a);
    await a.manager.start();
    await a.manager.elected();
    const b = replica('b', ns, { leaseName: 'stamper', ...fastTimings });
    running.push(b);
    await b.manager.start();
    const before = await lease(admin, ns, 'stamper');
    expect(before.spec?.holderIdentity).toBe(a.manager.identity);

    proxy.cut();

    // The cut-off leader notices within renewDeadline and stops its controller.
    await waitFor(() => a.lost === 1, { description: 'the cut-off replica to report leadership lost' });
    expect(a.manager.isLeader()).toBe(false);
    // The standby takes over once it has seen the lease unchanged for its duration. The bound is
    // generous: lease (3 s) plus two jittered retry periods, plus slack for a busy machine.
    await waitFor(() => b.manager.isLeader(), {
      description: 'the standby to take over the lease',
      timeoutMs: 3_000 + 2 * 1_100 + 10_000,
    });
    const after = await lease(admin, ns, 'stamper');
    expect(after.spec?.holderIdentity).toBe(b.manager.identity);
    expect(after.spec?.leaseTransitions).toBe((before.spec?.leaseTransitions ?? 0) + 1);

    await createConfigMap(admin, ns, 'after-takeover');
    const stamps = await waitFor(
      async () => {
        const s = await stampsOn(admin, ns, 'after-takeover');
        return Object.keys(s).length > 0 ? s : undefined;
      },
      { description: 'the new leader to stamp a ConfigMap' },
    );
    expect(stamps).toEqual({ 'aro.test/reconciled-by-b': b.manager.identity });
  });

  it('hands over at once on a clean shutdown instead of waiting for the lease to expire', async () => {
    const ns = await createTestNamespace('le-release');
    // A lease of 60 s: a takeover by expiry could not happen within this test's waits.
    const slow = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 500 };
    const a = replica('a', ns, { leaseName: 'stamper', ...slow });
    running.push(a);
    await a.manager.start();
    await a.manager.elected();
    const b = replica('b', ns, { leaseName: 'stamper', ...slow });
    running.push(b);
    await b.manager.start();
    // The standby has seen the lease held, so it is really standing by.
    await waitFor(() => b.manager.leader() === a.manager.identity, {
      description: 'the standby to see the leader',
    });

    await a.stop();
    running.splice(running.indexOf(a), 1);
    const released = await lease(admin, ns, 'stamper');
    expect(released.spec?.holderIdentity ?? '').not.toBe(a.manager.identity);

    await waitFor(() => b.manager.isLeader(), {
      description: 'the standby to take the released lease',
      timeoutMs: 15_000,
    });
    const taken = await lease(admin, ns, 'stamper');
    expect(taken.spec?.holderIdentity).toBe(b.manager.identity);
    expect(taken.spec?.leaseTransitions).toBe(1);

    await createConfigMap(admin, ns, 'after-handover');
    const stamps = await waitFor(
      async () => {
        const s = await stampsOn(admin, ns, 'after-handover');
        return Object.keys(s).length > 0 ? s : undefined;
      },
      { description: 'the new leader to stamp a ConfigMap' },
    );
    expect(stamps).toEqual({ 'aro.test/reconciled-by-b': b.manager.identity });
  });
});
