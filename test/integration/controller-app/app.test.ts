import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { register } from 'prom-client';
import type { V1Lease } from '@kubernetes/client-node';
import { SchedulerRegistry } from '@nestjs/schedule';
import { MultiClient } from '@aro/actions';
import { UnregistrationQueue } from '@aro/controllers';
import { KubeClient, LeaseKind, PodKind, isNotFound } from '@aro/kube';
import { getOrCreateCounter } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import type { RunningSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { startTestSimulator } from '../ephemeral-runner/fixture';
import { BootedApp, bootControllerApp, createRunnerForApp } from './boot';
import { RuntimeProbe } from './fixtures/runtime-probe.module';

describe('The controller app', () => {
  let sim: RunningSimulator;
  let booted: BootedApp[] = [];

  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    for (const b of booted) await b.close();
    booted = [];
  });

  const runnerIn = (namespace: string, name: string) => createRunnerForApp(sim, namespace, name);

  it('serves health, readiness and metrics, leads, and reconciles runners', async () => {
    const namespace = await createTestNamespace('app');
    const app = await bootControllerApp({ WATCH_NAMESPACE: namespace, LEADER_ELECTION_NAMESPACE: namespace });
    booted.push(app);
    expect((await app.get('/healthz')).status).toBe(200);
    await waitFor(async () => (await app.get('/readyz')).status === 200, {
      description: '/readyz to answer 200',
    });
    await app.manager.elected();

    await runnerIn(namespace, 'app-runner');
    const kube = new KubeClient(testKubeConfig());
    await waitFor(
      () =>
        kube.get(PodKind, namespace, 'app-runner').then(
          () => true,
          () => false,
        ),
      {
        description: 'the runner pod created by the app',
      },
    );

    // The reconcile that created the pod counts itself once the create returns: wait for it.
    let metrics = '';
    await waitFor(
      async () =>
        /controller_runtime_reconcile_total\{controller="ephemeralrunner",result="success"\} [1-9]/.test(
          (metrics = (await app.get('/metrics')).body),
        ),
      { description: 'a successful reconcile counted on /metrics' },
    );
    expect(metrics).toContain('workqueue_adds_total{name="ephemeralrunner",controller="ephemeralrunner"}');
    expect(metrics).toMatch(/leader_election_master_status\{name="aro-controller"\} 1/);
    expect(metrics).toContain('aro_runner_unregistration_queue_depth');
    expect(metrics).toContain('nodejs_heap_size_total_bytes');
    // The route is @willsoto/nestjs-prometheus's, in the app's module graph, answering from the app's
    // registry (prom-client's global one holds none of these series).
    expect(app.app.get(PrometheusModule, { strict: false })).toBeInstanceOf(PrometheusModule);
    expect(await register.metrics()).not.toContain('controller_runtime_reconcile_total');
  });

  it('fails /healthz when a part of the manager died, naming it, so the kubelet restarts the process', async () => {
    const namespace = await createTestNamespace('app-sick');
    const app = await bootControllerApp({ WATCH_NAMESPACE: namespace, LEADER_ELECTION: 'false' });
    booted.push(app);
    expect((await app.get('/healthz')).status).toBe(200);
    app.manager.add({
      name: 'doomed-worker',
      needLeaderElection: false,
      start: () => Promise.reject(new Error('worker crashed')),
    });
    await waitFor(async () => (await app.get('/healthz')).status === 503, {
      description: '/healthz to fail',
    });
    expect((await app.get('/healthz')).body).toContain('doomed-worker');
  });

  it('stands by while another replica leads, ready but idle, and takes over when it shuts down', async () => {
    const namespace = await createTestNamespace('app-ha');
    const env = {
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION_NAMESPACE: namespace,
      LEASE_DURATION_SECONDS: '4',
      RENEW_DEADLINE_SECONDS: '3',
      RETRY_PERIOD_SECONDS: '0.5',
    };
    const leader = await bootControllerApp(env);
    booted.push(leader);
    await leader.manager.elected();
    // The orphan sweep is scheduled in the SchedulerRegistry while leading, and only then.
    const sweepScheduled = (app: BootedApp) =>
      app.app.get(SchedulerRegistry).getTimeouts().includes('orphan-registration-sweep');
    await waitFor(() => sweepScheduled(leader), { description: "the sweep in the leader's scheduler" });
    const standby = await bootControllerApp(env);
    booted.push(standby);
    await waitFor(async () => (await standby.get('/readyz')).status === 200, {
      description: 'the standby ready',
    });
    expect(standby.manager.isLeader()).toBe(false);
    expect((await standby.get('/readyz')).body).toContain('"leader":false');
    expect(sweepScheduled(standby)).toBe(false);

    await leader.close();
    booted = booted.filter((b) => b !== leader);
    const kube = new KubeClient(testKubeConfig());
    await waitFor(() => standby.manager.isLeader(), {
      description: 'the standby to take over',
      timeoutMs: 20_000,
    });
    const lease = await kube.get<V1Lease>(LeaseKind, namespace, 'aro-controller');
    expect(lease.spec?.holderIdentity).toBe(standby.manager.identity);
    await waitFor(() => sweepScheduled(standby), { description: "the sweep in the new leader's scheduler" });

    await runnerIn(namespace, 'ha-runner');
    await waitFor(
      () =>
        kube.get(PodKind, namespace, 'ha-runner').then(
          () => true,
          (e) => (isNotFound(e) ? false : Promise.reject(e)),
        ),
      {
        description: 'the new leader to reconcile',
      },
    );
  });

  it('gives an extension loaded from ARO_EXTENSIONS the runtime the app itself uses', async () => {
    const namespace = await createTestNamespace('app-ext');
    const app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      ARO_EXTENSIONS: './test/integration/controller-app/fixtures/runtime-probe.module',
    });
    booted.push(app);
    const probe = app.app.get(RuntimeProbe);
    expect(probe.kube).toBe(app.app.get(KubeClient));
    expect(probe.manager).toBe(app.manager);
    expect(probe.cache).toBe(app.manager.cache);
    expect(probe.actions).toBe(app.app.get(MultiClient));
    expect(probe.resolver).toBe(app.app.get(SecretResolver));
    expect(probe.unregistrations).toBe(app.app.get(UnregistrationQueue));
    // The registry the extension got is the one /metrics serves.
    getOrCreateCounter(probe.registry, { name: 'probe_extension_total', help: 'a probe' }).inc();
    expect((await app.get('/metrics')).body).toContain('probe_extension_total 1');
  });
});
