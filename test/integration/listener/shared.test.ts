import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { V1Role, V1RoleBinding, V1Secret } from '@kubernetes/client-node';
import { KubeClient, RoleBindingKind, RoleKind, SecretKind } from '@aro/kube';
import type { RunningSimulator } from '../../../apps/simulator/src';
import {
  startSharedListenerApp,
  type StartedSharedListener,
} from '../../../apps/listener/src/shared/shared-listener-app';
import { kubeConfigForUser, testKubeConfig, waitFor } from '../../harness';
import { testLogger } from '../ephemeral-runner/fixture';
import {
  FAST_TUNING,
  ListenerFixture,
  listenerFixture,
  metricValue,
  startListenerTestSimulator,
} from './fixture';
import { scaled } from '../../harness/time-scale';

/** Jest's bound on each case below (the failover case waits out sessions expiring), at the run's time scale. */
jest.setTimeout(scaled(180_000));

/**
 * Shared mode: one process (here in-process, as main.ts runs it with LISTENER_MODE=shared) serves the
 * sessions of several scale sets, each with its own credentials, as a user holding only each set's
 * listener Role (patch its EphemeralRunnerSet by name, patch runners and their status).
 */
describe('A shared listener serving several scale sets', () => {
  let sim: RunningSimulator;
  const fixtures: ListenerFixture[] = [];
  let app: StartedSharedListener | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    sim = await startListenerTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    for (const fx of fixtures.splice(0)) await fx.stopAll();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A user bound to the listener Role of every fixture's namespace, and nothing else. */
  async function sharedUser(user: string) {
    const admin = new KubeClient(testKubeConfig());
    for (const fx of fixtures) {
      await admin.create<V1RoleBinding>(RoleBindingKind, {
        metadata: { name: `shared-${user}`, namespace: fx.namespace },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'listener' },
        subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
      });
    }
    admin.close();
    return kubeConfigForUser(user);
  }

  const sessionOf = (fx: ListenerFixture) => sim.sessions().find((s) => s.scaleSetId === fx.scaleSetId);

  it('holds one session per scale set with its own credentials; a refused one stalls no other', async () => {
    for (let i = 0; i < 3; i++)
      fixtures.push(await listenerFixture(sim, { minRunners: 1, prefix: 'shared' }));
    const [a, b, refused] = fixtures;
    dir = mkdtempSync(join(tmpdir(), 'aro-shared-listener-'));
    writeFileSync(join(dir, 'a.json'), JSON.stringify(a.config));
    writeFileSync(join(dir, 'b.json'), JSON.stringify(b.config));
    // Its own credentials, which the service refuses: only this set backs off.
    writeFileSync(
      join(dir, 'refused.json'),
      JSON.stringify({ ...refused.config, github_token: 'ghp_revoked' }),
    );
    // One bad file is skipped (logged), never the others.
    writeFileSync(join(dir, 'broken.json'), '{"configure_url": ');
    app = await startSharedListenerApp({
      configDir: dir,
      rescanMs: 3_600_000,
      logger: testLogger(),
      serve: { host: '127.0.0.1', port: 0 },
      metricsEndpoint: '/metrics',
      owner: 'shared-listener-0',
      kubeConfig: await sharedUser(`shared-listener-${process.pid}`),
      tuning: FAST_TUNING,
    });
    expect(app.host.keys().sort()).toEqual(['a', 'b', 'refused']);

    await waitFor(() => sessionOf(a) && sessionOf(b), { description: 'sessions for a and b' });
    expect(sessionOf(a)?.ownerName).toBe('shared-listener-0');
    const jobsA = [1, 2, 3].map(() => sim.enqueueJob({ scaleSetId: a.scaleSetId }));
    const jobsB = [1].map(() => sim.enqueueJob({ scaleSetId: b.scaleSetId }));
    await a.waitForSpec((s) => s.replicas === 4, 'a: 3 assigned + 1 min');
    await b.waitForSpec((s) => s.replicas === 2, 'b: 1 assigned + 1 min');
    expect([...jobsA, ...jobsB].every((j) => sim.job(j.jobId)?.state === 'acquired')).toBe(true);

    // The refused set never got a session and its EphemeralRunnerSet was never scaled.
    expect(sessionOf(refused)).toBeUndefined();
    expect((await refused.ers()).spec.replicas).toBe(0);

    const scrape = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${app!.port}${path}`);
      return { status: res.status, body: await res.text() };
    };
    const body = await waitFor(
      async () => {
        const m = (await scrape('/metrics')).body;
        const refusedSeries = `aro_listener_session_creates_total{result="failed",name="arc-set",namespace="${refused.namespace}"}`;
        return (metricValue(m, refusedSeries) ?? 0) >= 1 ? m : undefined;
      },
      { description: 'the refused set’s failed session creates, on its own series' },
    );
    // ARO's and upstream's series each carry the set's EphemeralRunnerSet.
    expect(metricValue(body, `aro_listener_session_open{name="arc-set",namespace="${a.namespace}"}`)).toBe(1);
    expect(
      metricValue(body, `aro_listener_session_open{name="arc-set",namespace="${refused.namespace}"}`),
    ).toBe(0);
    expect(
      metricValue(body, `aro_listener_jobs_acquired_total{name="arc-set",namespace="${a.namespace}"}`),
    ).toBe(3);
    expect(
      metricValue(body, `aro_listener_jobs_acquired_total{name="arc-set",namespace="${b.namespace}"}`),
    ).toBe(1);
    expect(body).toMatch(new RegExp(`gha_desired_runners\\{[^}]*namespace="${b.namespace}"\\} 2`));
    expect((await scrape('/readyz')).status).toBe(200);
    expect((await scrape('/healthz')).status).toBe(200);

    // a's config goes away: its session is deleted; b is served on.
    unlinkSync(join(dir, 'a.json'));
    await app.rescan();
    expect(app.host.keys().sort()).toEqual(['b', 'refused']);
    expect(sessionOf(a)).toBeUndefined();
    sim.enqueueJob({ scaleSetId: b.scaleSetId });
    await b.waitForSpec((s) => s.replicas === 3, 'b: 2 assigned + 1 min, after a left');
    const after = (await scrape('/metrics')).body;
    expect(after).not.toContain(`namespace="${a.namespace}"`);
  });

  it('restarts a scale set’s loop when its config changes (bounds, rotated credentials), and only then', async () => {
    for (let i = 0; i < 2; i++)
      fixtures.push(await listenerFixture(sim, { maxRunners: 2, prefix: 'shared-config' }));
    const [a, b] = fixtures;
    // The configs Secret, as the AutoscalingListener controller keeps it (one key per scale set), and
    // the chart's rule for the shared listener: `get` on that one Secret.
    const admin = new KubeClient(testKubeConfig());
    const configs = 'shared-listener-configs';
    const json = (config: unknown, space?: number) =>
      Buffer.from(JSON.stringify(config, null, space)).toString('base64');
    const writeConfigs = (data: Record<string, string>) =>
      admin.mergePatch(SecretKind, a.namespace, configs, { data });
    await admin.create<V1Secret>(SecretKind, {
      metadata: { name: configs, namespace: a.namespace },
      data: { 'a.json': json(a.config) },
    });
    const user = `shared-config-${process.pid}`;
    await admin.create<V1Role>(RoleKind, {
      metadata: { name: 'shared-configs', namespace: a.namespace },
      rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [configs], verbs: ['get'] }],
    });
    await admin.create<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: 'shared-configs', namespace: a.namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'shared-configs' },
      subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
    });
    // Rescans are the test's (awaited: the configs were read and applied when it returns).
    app = await startSharedListenerApp({
      configSecret: { namespace: a.namespace, name: configs },
      rescanMs: 3_600_000,
      logger: testLogger(),
      metricsEndpoint: '/metrics',
      owner: 'shared-listener-0',
      kubeConfig: await sharedUser(user),
      tuning: FAST_TUNING,
    });
    const first = await waitFor(() => sessionOf(a), { description: 'a’s session' });
    for (let i = 0; i < 4; i++) sim.enqueueJob({ scaleSetId: a.scaleSetId });
    await a.waitForSpec((s) => s.replicas === 2, 'a: 4 jobs assigned, maxRunners 2');

    // Unrelated changes: a's config written again as another text of the same config, another set's
    // key added; then a resync of all of it. The listener read each (b is served), a kept its session.
    await writeConfigs({ 'a.json': json(a.config, 2), 'b.json': json(b.config) });
    await app.rescan();
    expect(app.host.keys().sort()).toEqual(['a', 'b']);
    const bSession = await waitFor(() => sessionOf(b), { description: 'b served from the key added' });
    await app.rescan();
    expect(sessionOf(a)?.sessionId).toBe(first.sessionId);

    // New bounds: a's loop restarts (a new session) and the new maximum is applied; b is left alone.
    await writeConfigs({ 'a.json': json({ ...a.config, max_runners: 4 }) });
    await app.rescan();
    const second = await waitFor(
      () => {
        const s = sessionOf(a);
        return s && s.sessionId !== first.sessionId ? s : undefined;
      },
      { description: 'a new session for a after its maxRunners changed' },
    );
    await a.waitForSpec((s) => s.replicas === 4, 'a: 4 jobs assigned, maxRunners 4');
    expect(sessionOf(b)?.sessionId).toBe(bSession.sessionId);

    // Rotated credentials: a restarts on the new token.
    sim.addPat('ghp_rotated');
    await writeConfigs({ 'a.json': json({ ...a.config, max_runners: 4, github_token: 'ghp_rotated' }) });
    await app.rescan();
    await waitFor(
      () => {
        const s = sessionOf(a);
        return s && s.sessionId !== second.sessionId ? s : undefined;
      },
      { description: 'a new session for a after its token was rotated' },
    );
    expect(sessionOf(b)?.sessionId).toBe(bSession.sessionId);
    admin.close();
  });

  it('fails over on kill -9: a standby process takes every session once the dead one’s expire', async () => {
    // Sessions of a listener that stopped polling expire after 5 s on this service.
    const quick = await startListenerTestSimulator({ sessionIdleTimeoutMs: 5_000 });
    const children: ChildProcess[] = [];
    try {
      for (let i = 0; i < 2; i++) fixtures.push(await listenerFixture(quick, { prefix: 'shared-failover' }));
      dir = mkdtempSync(join(tmpdir(), 'aro-shared-failover-'));
      fixtures.forEach((fx, i) => writeFileSync(join(dir!, `set-${i}.json`), JSON.stringify(fx.config)));
      const kubeconfigPath = join(dir, 'kubeconfig');
      writeFileSync(kubeconfigPath, (await sharedUser(`shared-failover-${process.pid}`)).exportConfig());
      // Two replicas of the shared listener, as the Deployment runs them: whichever opens a set's
      // session serves it; the other waits out the 409 conflict with backoff, a warm standby.
      const root = resolve(__dirname, '..', '..', '..');
      const start = (name: string): ChildProcess => {
        const child = spawn(process.execPath, ['-r', '@swc-node/register', 'apps/listener/src/main.ts'], {
          cwd: root,
          env: {
            ...process.env,
            LISTENER_MODE: 'shared',
            LISTENER_CONFIG_DIR: dir,
            LISTENER_METRICS_ADDR: '127.0.0.1:0',
            KUBECONFIG: kubeconfigPath,
            POD_NAME: name,
            LOG_LEVEL: 'warn',
          },
          stdio: 'ignore',
        });
        children.push(child);
        return child;
      };
      const first = start('shared-a');
      const owners = () =>
        fixtures.map((fx) => quick.sessions().find((s) => s.scaleSetId === fx.scaleSetId)?.ownerName);
      await waitFor(() => owners().every((o) => o === 'shared-a'), {
        description: 'the first replica to hold every session',
        timeoutMs: 60_000,
      });
      start('shared-b');
      first.kill('SIGKILL');
      await waitFor(() => owners().every((o) => o === 'shared-b'), {
        description: 'the standby to hold every session after kill -9',
        // Session expiry (5 s) plus the standby's conflict backoff (doubling from 5 s, up to 60 s).
        timeoutMs: 90_000,
      });
      const job = quick.enqueueJob({ scaleSetId: fixtures[1].scaleSetId });
      await fixtures[1].waitForSpec((s) => s.replicas === 1, 'the standby scales for a new job');
      expect(quick.job(job.jobId)?.state).toBe('acquired');
    } finally {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      for (const fx of fixtures.splice(0)) await fx.stopAll();
      await quick.stop();
    }
  });
});
