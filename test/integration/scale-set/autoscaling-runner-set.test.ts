import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadYaml } from '@kubernetes/client-node';
import type {
  V1ConfigMap,
  CoreV1Event,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  CLEANUP_PROTECTION_FINALIZER,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ListenerConfig,
  ListenerDefaults,
  autoscalingListenerName,
} from '@aro/api';
import { type AutoscalingRunnerSetModuleOptions, SCALE_SET_LEDGER_NAME } from '@aro/controllers';
import {
  ConfigMapKind,
  EventKind,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
} from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { runnerContainerRunning, waitFor } from '../../harness';
import {
  GITHUB_SECRET,
  LISTENER_IMAGE,
  ScaleSetFixture,
  live,
  runnerPodTemplate,
  scaleSetSuite,
  serviceClient,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

const CHART_MANIFEST = join(__dirname, 'fixtures', 'gha-runner-scale-set-default.yaml');

describe('AutoscalingRunnerSet controller', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  /** The app's graph, with short timings and `config` over the AutoscalingRunnerSet module's options. */
  async function start(config: Partial<AutoscalingRunnerSetModuleOptions> = {}) {
    f = await suite.start({ runnerScaleSet: config });
    return f;
  }

  function newScaleSet(name: string, change?: (ars: AutoscalingRunnerSet) => void): AutoscalingRunnerSet {
    const ars: AutoscalingRunnerSet = {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: { name, namespace: f.namespace },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        maxRunners: 5,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    };
    change?.(ars);
    return ars;
  }

  const readArs = (name: string) => f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
  const listenerOf = (ars: AutoscalingRunnerSet) =>
    autoscalingListenerName(
      ars.metadata!.name!,
      f.namespace,
      ars.spec.runnerGroup ?? '',
      ars.spec.githubConfigUrl ?? '',
    );
  const readListener = (ars: AutoscalingRunnerSet) =>
    f.read<AutoscalingListener>(AutoscalingListenerKind, listenerOf(ars), f.controllerNamespace);
  const scaleSetOnService = (name: string) => suite.sim.scaleSets().find((s) => s.name === name);
  const listenerConfig = async (listener: string): Promise<ListenerConfig | undefined> => {
    const secret = await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace);
    const data = secret?.data?.[ListenerDefaults.configSecretKey];
    return data ? (JSON.parse(Buffer.from(data, 'base64').toString()) as ListenerConfig) : undefined;
  };
  const events = async (name: string) =>
    (await f.list<CoreV1Event>(EventKind)).filter((e) => e.involvedObject?.name === name);

  /** The scale sets of this namespace the runner controller's ledger lists (what the orphan sweep audits). */
  async function ledgerScaleSets(): Promise<number[]> {
    const ledger = await f.read<V1ConfigMap>(ConfigMapKind, SCALE_SET_LEDGER_NAME, f.controllerNamespace);
    return Object.values(ledger?.data ?? {})
      .map((v) => JSON.parse(v) as { namespace: string; runnerScaleSetId: number })
      .filter((e) => e.namespace === f.namespace)
      .map((e) => e.runnerScaleSetId);
  }

  async function ready(name: string): Promise<AutoscalingRunnerSet> {
    return waitFor(
      async () => {
        const ars = await readArs(name);
        return ars?.status?.phase === 'Running' && ars.metadata?.annotations?.[Annotations.runnerScaleSetId]
          ? ars
          : undefined;
      },
      { description: `AutoscalingRunnerSet ${name} Running with a scale set`, timeoutMs: 60_000 },
    );
  }

  /** The chart's companions of the set, with the chart's cleanup-protection finalizer. */
  async function createChartDependents(): Promise<void> {
    const protect = { finalizers: [CLEANUP_PROTECTION_FINALIZER] };
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'arc-runner-set-gha-rs-github-secret', namespace: f.namespace, ...protect },
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.kube.create<V1ServiceAccount>(ServiceAccountKind, {
      metadata: { name: 'arc-runner-set-gha-rs-no-permission', namespace: f.namespace, ...protect },
    });
    await f.kube.create<V1Role>(RoleKind, {
      metadata: { name: 'arc-runner-set-gha-rs-manager', namespace: f.namespace, ...protect },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get'] }],
    });
    await f.kube.create<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: 'arc-runner-set-gha-rs-manager', namespace: f.namespace, ...protect },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'arc-runner-set-gha-rs-manager' },
      subjects: [{ kind: 'ServiceAccount', name: 'controller', namespace: f.controllerNamespace }],
    });
  }

  function chartManifest(): AutoscalingRunnerSet {
    const ars = loadYaml<AutoscalingRunnerSet>(readFileSync(CHART_MANIFEST, 'utf8'));
    ars.metadata!.namespace = f.namespace;
    ars.metadata!.labels!['actions.github.com/scale-set-namespace'] = f.namespace;
    ars.spec.githubConfigUrl = f.configUrl;
    return ars;
  }

  it("accepts and reconciles the chart's default AutoscalingRunnerSet: scale set, EphemeralRunnerSet, listener (upstream: create)", async () => {
    await start();
    await createChartDependents();
    await f.kube.create(AutoscalingRunnerSetKind, chartManifest());
    const ars = await ready('arc-runner-set');

    expect(ars.metadata?.finalizers).toContain(AUTOSCALING_RUNNER_SET_FINALIZER);
    const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    const onService = suite.sim.scaleSets().find((s) => s.id === id);
    expect(onService).toMatchObject({ name: 'arc-runner-set', runnerGroupId: 1 });
    expect(onService?.labels.map((l) => [l.name, l.type])).toEqual([['arc-runner-set', 'System']]);
    expect(onService?.runnerSetting).toMatchObject({ disableUpdate: true });
    expect(ars.metadata?.annotations).toMatchObject({
      [Annotations.runnerScaleSetName]: 'arc-runner-set',
      [Annotations.runnerGroupName]: 'Default',
    });
    expect(ars.metadata?.labels?.['actions.github.com/organization']).toBe('octo');

    const ers = await waitFor(() => f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, 'arc-runner-set'), {
      description: 'the EphemeralRunnerSet',
    });
    expect(ers.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'AutoscalingRunnerSet',
      name: 'arc-runner-set',
      controller: true,
    });
    expect(ers.metadata?.labels).toMatchObject({
      'app.kubernetes.io/component': 'runner-set',
      'actions.github.com/scale-set-name': 'arc-runner-set',
    });
    expect(ers.spec).toMatchObject({ replicas: 0, patchID: 0 });
    expect(ers.spec.ephemeralRunnerSpec).toMatchObject({
      githubConfigUrl: f.configUrl,
      githubConfigSecret: 'arc-runner-set-gha-rs-github-secret',
      runnerScaleSetId: id,
      spec: { serviceAccountName: 'arc-runner-set-gha-rs-no-permission' },
    });

    const listener = await waitFor(() => readListener(ars), { description: 'the listener' });
    // Upstream's suffix: up to 8 characters of the safe-encoding alphabet (fewer when the decimal sum is short).
    expect(listener.metadata?.name).toMatch(/^arc-runner-set-[bcdfghjklmnpqrstvwxz2456789]{1,8}-listener$/);
    expect(listener.spec).toMatchObject({
      runnerScaleSetId: id,
      autoscalingRunnerSetNamespace: f.namespace,
      autoscalingRunnerSetName: 'arc-runner-set',
      ephemeralRunnerSetName: 'arc-runner-set',
      minRunners: 0,
      maxRunners: 2147483647,
      image: LISTENER_IMAGE,
    });

    // The listener scales the set; the set makes runners; the status mirrors the set (upstream: status mirrors ERS).
    await f.scale('arc-runner-set', 2, 1);
    await waitForRunners(f, 'arc-runner-set', (r) => r.length === 2, '2 runners');
    await waitFor(async () => (await readArs('arc-runner-set'))?.status?.currentRunners === 2, {
      description: 'currentRunners 2',
    });
    // Status changes do not churn the listener (upstream: no listener churn).
    expect((await readListener(ars))?.metadata?.uid).toBe(listener.metadata?.uid);
  });

  it('deleting it leaves nothing behind in the cluster or on the service, and releases the chart objects (upstream: delete cleanup; external permissions cleanup)', async () => {
    await start();
    await createChartDependents();
    await f.kube.create(AutoscalingRunnerSetKind, chartManifest());
    const ars = await ready('arc-runner-set');
    const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    const listenerName = listenerOf(ars);
    await waitFor(() => f.read<V1Pod>(PodKind, listenerName, f.controllerNamespace), {
      description: 'the listener pod',
    });
    await f.scale('arc-runner-set', 3, 1);
    const runners = await waitForRunners(f, 'arc-runner-set', (r) => r.length === 3, '3 runners');
    // This test's runners, by name: an earlier test of the file may have left registrations of its own
    // under the same scale set name (the chart's), which the service's scale set is adopted by.
    const names = runners.map((r) => r.metadata!.name!.toLowerCase());
    await waitFor(
      () => suite.sim.registrations().filter((r) => names.includes(r.name.toLowerCase())).length === 3,
      { description: '3 registrations on the service', timeoutMs: 90_000 },
    );
    expect(suite.sim.registrations().filter((r) => r.scaleSetId === id).length).toBeGreaterThan(0);
    expect(await ledgerScaleSets()).toContain(id);

    await f.kube.delete(AutoscalingRunnerSetKind, f.namespace, 'arc-runner-set');
    await waitFor(async () => (await readArs('arc-runner-set')) === undefined, {
      description: 'the AutoscalingRunnerSet gone',
      timeoutMs: 90_000,
    });

    expect(await f.list(EphemeralRunnerSetKind)).toHaveLength(0);
    expect(await f.runners()).toHaveLength(0);
    expect(await f.list(AutoscalingListenerKind, f.controllerNamespace)).toHaveLength(0);
    expect(await f.list(PodKind, f.controllerNamespace)).toHaveLength(0);
    expect(
      (await f.list<V1Secret>(SecretKind, f.controllerNamespace)).map((s) => s.metadata?.name),
    ).not.toContain(`${listenerName}-config`);
    expect(await f.read(ServiceAccountKind, listenerName, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(RoleKind, listenerName)).toBeUndefined();
    expect(await f.read(RoleBindingKind, listenerName)).toBeUndefined();
    await waitFor(async () => (await f.list(PodKind)).length === 0, { description: 'runner pods gone' });
    expect(suite.sim.scaleSets().find((s) => s.id === id)).toBeUndefined();
    expect(suite.sim.registrations().filter((r) => r.scaleSetId === id)).toHaveLength(0);
    // The orphan sweep no longer audits a scale set the service has deleted (with credentials an
    // uninstall takes away, it would warn on every pass).
    expect(await ledgerScaleSets()).not.toContain(id);
    // The chart's objects are released, so helm can delete them.
    for (const [kind, name] of [
      [SecretKind, 'arc-runner-set-gha-rs-github-secret'],
      [ServiceAccountKind, 'arc-runner-set-gha-rs-no-permission'],
      [RoleKind, 'arc-runner-set-gha-rs-manager'],
      [RoleBindingKind, 'arc-runner-set-gha-rs-manager'],
    ] as const) {
      expect((await f.read(kind, name))?.metadata?.finalizers ?? []).not.toContain(
        CLEANUP_PROTECTION_FINALIZER,
      );
    }
  });

  it('creates the scale set again when the service has deleted it, with an Event, and moves the runners and listener to it (#3205, #3935)', async () => {
    await start({ scaleSetCheckIntervalMs: 300 });
    const name = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await ready(name);
    const oldId = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    await serviceClient(suite.sim).deleteRunnerScaleSet(oldId);
    expect(scaleSetOnService(name)).toBeUndefined();

    const recreated = await waitFor(
      async () => {
        const a = await readArs(name);
        const id = Number(a?.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return id && id !== oldId ? id : undefined;
      },
      { description: 'a new scale set ID', timeoutMs: 60_000 },
    );
    expect(scaleSetOnService(name)?.id).toBe(recreated);
    expect((await events(name)).some((e) => e.reason === 'ScaleSetRecreated' && e.type === 'Warning')).toBe(
      true,
    );
    await waitFor(
      async () =>
        (await f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name))?.spec.ephemeralRunnerSpec
          .runnerScaleSetId === recreated,
      {
        description: 'the EphemeralRunnerSet on the new scale set',
      },
    );
    await waitFor(async () => (await readListener(ars))?.spec.runnerScaleSetId === recreated, {
      description: 'the listener on the new scale set',
    });
  });

  it('records bad credentials as a condition and a Warning Event, retries with backoff, and recovers when fixed', async () => {
    await start();
    const name = uniqueName('ars');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'bad-secret', namespace: f.namespace },
      stringData: { github_token: 'ghp_wrong' },
    });
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(name, (a) => (a.spec.githubConfigSecret = 'bad-secret')),
    );
    const failed = await waitFor(
      async () => {
        const a = await readArs(name);
        const c = a?.status?.conditions?.find((x) => x.type === 'ScaleSetReady');
        return c?.status === 'False' ? c : undefined;
      },
      { description: 'ScaleSetReady False' },
    );
    expect(failed.reason).toBe('InvalidCredentials');
    expect((await events(name)).some((e) => e.type === 'Warning' && e.reason === 'InvalidCredentials')).toBe(
      true,
    );
    expect(scaleSetOnService(name)).toBeUndefined();

    await f.kube.mergePatch(SecretKind, f.namespace, 'bad-secret', {
      stringData: { github_token: DEFAULT_PAT },
    });
    await ready(name);
    expect((await readArs(name))?.status?.conditions?.find((x) => x.type === 'ScaleSetReady')?.status).toBe(
      'True',
    );
  });

  it('names a missing runner group, a missing CA, an unusable proxy and an unusable config URL as the cause', async () => {
    await start();
    const cases: Array<[string, (a: AutoscalingRunnerSet) => void, string]> = [
      ['group', (a) => (a.spec.runnerGroup = 'no-such-group'), 'RunnerGroupNotFound'],
      ['url', (a) => (a.spec.githubConfigUrl = 'ftp://github.example/octo'), 'InvalidConfiguration'],
      [
        'tls',
        (a) =>
          (a.spec.githubServerTLS = {
            certificateFrom: { configMapKeyRef: { name: 'no-such-ca', key: 'ca.crt' } },
          }),
        'TLSFailure',
      ],
      [
        'proxy',
        (a) =>
          (a.spec.proxy = {
            http: { url: 'http://127.0.0.1:1', credentialSecretRef: 'no-such-proxy-secret' },
          }),
        'ProxyFailure',
      ],
    ];
    for (const [suffix, change, reason] of cases) {
      const name = uniqueName(`ars-${suffix}`);
      await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name, change));
      const condition = await waitFor(
        async () =>
          (await readArs(name))?.status?.conditions?.find(
            (x) => x.type === 'ScaleSetReady' && x.status === 'False',
          ),
        { description: `ScaleSetReady False for ${suffix}` },
      );
      expect([suffix, condition.reason]).toEqual([suffix, reason]);
      expect((await events(name)).some((e) => e.type === 'Warning' && e.reason === reason)).toBe(true);
    }
  });

  it('moves the scale set to another runner group and renames it when the spec changes (upstream: runner group update; RunnerScaleSetName annotation)', async () => {
    await start();
    suite.sim.createRunnerGroup({ org: 'octo' }, 'team-a');
    const name = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await ready(name);
    const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      spec: { runnerGroup: 'team-a', runnerScaleSetName: `${name}-renamed` },
    });
    await waitFor(
      () => {
        const s = suite.sim.scaleSets().find((x) => x.id === id);
        return s?.runnerGroupName === 'team-a' && s.name === `${name}-renamed`;
      },
      { description: 'the scale set moved and renamed on the service' },
    );
    await waitFor(
      async () => {
        const a = await readArs(name);
        return (
          a?.metadata?.annotations?.[Annotations.runnerGroupName] === 'team-a' &&
          a.metadata.annotations[Annotations.runnerScaleSetName] === `${name}-renamed`
        );
      },
      { description: 'annotations updated' },
    );
  });

  it('drains runners before patching a new runner spec in place, and recreates only the listener when maxRunners changes (upstream: wait for running/pending before update; maxRunners recreates only the listener)', async () => {
    await start();
    const name = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await ready(name);
    const firstListener = await waitFor(() => readListener(ars), { description: 'the listener' });
    const ersUid = (await f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name))?.metadata?.uid;

    // maxRunners: a new listener, the same EphemeralRunnerSet.
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, { spec: { maxRunners: 7 } });
    await waitFor(
      async () => {
        const l = await readListener(ars);
        return l && l.metadata?.uid !== firstListener.metadata?.uid && l.spec.maxRunners === 7
          ? l
          : undefined;
      },
      { description: 'a new listener with maxRunners 7' },
    );
    expect((await f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name))?.metadata?.uid).toBe(ersUid);

    // A registered idle runner: a new image waits for it to go (the listener stops, the set releases it).
    await f.scale(name, 1, 1);
    const [runner] = await waitForRunners(f, name, (r) => r.length === 1, 'a runner');
    await waitFor(() => f.read<V1Pod>(PodKind, runner.metadata!.name!), { description: 'its pod' });
    await runnerContainerRunning(f.namespace, runner.metadata!.name!);
    await waitForRunners(f, name, (r) => (r[0]?.status?.runnerId ?? 0) > 0, 'the runner registered');
    await waitFor(async () => ((await f.runnerSet(name))?.status?.pendingEphemeralRunners ?? 0) === 1, {
      description: 'pending 1',
    });
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      spec: {
        template: {
          spec: {
            containers: [
              {
                name: 'runner',
                image: 'ghcr.io/actions/actions-runner:2.999.0',
                command: ['/home/runner/run.sh'],
              },
            ],
          },
        },
      },
    });
    await waitFor(async () => (await f.runnerSet(name))?.spec.replicas === 0, {
      description: 'the set told to release idle runners',
    });
    await waitForRunners(f, name, (r) => live(r).length === 0, 'the idle runner released');
    const patched = await waitFor(
      async () => {
        const s = await f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name);
        return s?.spec.ephemeralRunnerSpec.spec?.containers[0].image?.endsWith('2.999.0') ? s : undefined;
      },
      { description: 'the runner spec patched in place', timeoutMs: 60_000 },
    );
    expect(patched.metadata?.uid).toBe(ersUid);
    await waitFor(() => readListener(ars), { description: 'the listener back' });
    expect(live(await f.runners(name)).length).toBe(0);
  });
  it('moves the runner set, the listener and its config secret to a new GitHub config secret (upstream: GitHub config secret change updates ERS and listener)', async () => {
    await start();
    const secondToken = `${DEFAULT_PAT}_second`;
    suite.sim.addPat(secondToken);
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'second-secret', namespace: f.namespace },
      stringData: { github_token: secondToken },
    });
    const name = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await ready(name);
    const id = ars.metadata?.annotations?.[Annotations.runnerScaleSetId];
    const firstListener = await waitFor(() => readListener(ars), { description: 'the listener' });
    const ersUid = (await f.runnerSet(name))?.metadata?.uid;
    await waitFor(
      async () => (await listenerConfig(firstListener.metadata!.name!))?.github_token === DEFAULT_PAT,
      {
        description: 'the first token in the listener config',
      },
    );

    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      spec: { githubConfigSecret: 'second-secret' },
    });
    // The runner set, in place: its runners register with the new secret.
    await waitFor(
      async () => (await f.runnerSet(name))?.spec.ephemeralRunnerSpec.githubConfigSecret === 'second-secret',
      { description: 'the EphemeralRunnerSet on the new secret' },
    );
    expect((await f.runnerSet(name))?.metadata?.uid).toBe(ersUid);
    // The listener: a new one (its spec changed), whose config carries the new secret's token.
    const secondListener = await waitFor(
      async () => {
        const l = await readListener(ars);
        return l &&
          l.metadata?.uid !== firstListener.metadata?.uid &&
          l.spec.githubConfigSecret === 'second-secret'
          ? l
          : undefined;
      },
      { description: 'a listener on the new secret', timeoutMs: 60_000 },
    );
    await waitFor(
      async () => (await listenerConfig(secondListener.metadata!.name!))?.github_token === secondToken,
      { description: "the new secret's token in the listener config", timeoutMs: 60_000 },
    );
    await waitFor(() => f.read<V1Pod>(PodKind, secondListener.metadata!.name!, f.controllerNamespace), {
      description: 'the new listener pod',
    });
    // The same scale set, still reachable with the new credentials.
    const after = await ready(name);
    expect(after.metadata?.annotations?.[Annotations.runnerScaleSetId]).toBe(id);
    expect(after.status?.conditions?.find((c) => c.type === 'ScaleSetReady')?.status).toBe('True');
    // A runner made now uses the new secret.
    await f.scale(name, 1, 1);
    const [runner] = await waitForRunners(f, name, (r) => r.length === 1, 'a runner');
    expect(runner.spec.githubConfigSecret).toBe('second-secret');
  });

  it('deletes a set whose runner-scale-set-id annotation is missing: no hang, its scale set found by name and deleted, nothing left (upstream: cleanup when the scale-set-id annotation is missing)', async () => {
    const first = await start();
    const name = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await ready(name);
    const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    const listenerName = listenerOf(ars);
    await waitFor(() => f.read<V1Pod>(PodKind, listenerName, f.controllerNamespace), {
      description: 'the listener pod',
    });
    // With the controller down, the ID annotation goes (an edit, a `kubectl replace`) and the set is
    // deleted: the controller that comes back finds a deleting set without its scale set's ID.
    await first.stop();
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      metadata: { annotations: { [Annotations.runnerScaleSetId]: null } },
    });
    await f.kube.delete(AutoscalingRunnerSetKind, f.namespace, name);
    f = await suite.start({ namespacesOf: first });
    await waitFor(async () => (await readArs(name)) === undefined, {
      description: 'the AutoscalingRunnerSet gone',
      timeoutMs: 90_000,
    });
    expect(await f.runnerSet(name)).toBeUndefined();
    expect(await readListener(ars)).toBeUndefined();
    expect(await f.read(PodKind, listenerName, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(SecretKind, `${listenerName}-config`, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(ServiceAccountKind, listenerName, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(RoleKind, listenerName)).toBeUndefined();
    expect(suite.sim.scaleSets().find((s) => s.id === id)).toBeUndefined();

    // A set that never had a scale set (its credentials were refused) goes at once: nothing to delete.
    const refused = uniqueName('ars-bad');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'refused-secret', namespace: f.namespace },
      stringData: { github_token: 'ghp_wrong' },
    });
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(refused, (a) => (a.spec.githubConfigSecret = 'refused-secret')),
    );
    await waitFor(
      async () =>
        (await readArs(refused))?.status?.conditions?.find(
          (c) => c.type === 'ScaleSetReady' && c.status === 'False',
        ),
      { description: 'ScaleSetReady False' },
    );
    await f.kube.delete(AutoscalingRunnerSetKind, f.namespace, refused);
    await waitFor(async () => (await readArs(refused)) === undefined, {
      description: 'the refused AutoscalingRunnerSet gone',
      timeoutMs: 60_000,
    });
  });
  it('propagates its labels and the set and runner metadata to the EphemeralRunnerSet and its runners, less the excluded prefixes, and follows changes (upstream: labels/annotations/runner-metadata propagation)', async () => {
    f = await suite.start({ env: { EXCLUDE_LABEL_PROPAGATION_PREFIXES: 'argocd.argoproj.io/' } });
    const name = uniqueName('ars');
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(name, (a) => {
        a.metadata!.labels = { team: 'blue', 'argocd.argoproj.io/instance': 'runners' };
        a.spec.ephemeralRunnerSetMetadata = {
          labels: { 'set-label': 's', 'argocd.argoproj.io/set': 'no' },
          annotations: { 'set-annotation': 's' },
        };
        a.spec.ephemeralRunnerMetadata = {
          labels: { 'runner-label': 'r1' },
          annotations: { 'runner-annotation': 'r' },
        };
      }),
    );
    await ready(name);
    const excluded = (labels: Record<string, string> | undefined) =>
      Object.keys(labels ?? {}).filter((k) => k.startsWith('argocd.argoproj.io/'));
    const ers = await waitFor(() => f.runnerSet(name), { description: 'the EphemeralRunnerSet' });
    expect(ers.metadata?.labels).toMatchObject({
      team: 'blue',
      'set-label': 's',
      'app.kubernetes.io/component': 'runner-set',
    });
    expect(excluded(ers.metadata?.labels)).toEqual([]);
    expect(ers.metadata?.annotations).toMatchObject({ 'set-annotation': 's' });
    expect(ers.spec.ephemeralRunnerMetadata?.labels).toEqual({ 'runner-label': 'r1' });

    await f.scale(name, 1, 1);
    const [first] = await waitForRunners(f, name, (r) => r.length === 1, 'a runner');
    expect(first.metadata?.labels).toMatchObject({
      team: 'blue',
      'runner-label': 'r1',
      'app.kubernetes.io/component': 'runner',
    });
    expect(excluded(first.metadata?.labels)).toEqual([]);
    expect(first.metadata?.annotations).toMatchObject({ 'runner-annotation': 'r' });

    // A change of the labels and of the runner metadata: the set follows in place, new runners too.
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      metadata: { labels: { team: 'green' } },
      spec: { ephemeralRunnerMetadata: { labels: { 'runner-label': 'r2' } } },
    });
    const updated = await waitFor(
      async () => {
        const s = await f.runnerSet(name);
        return s?.metadata?.labels?.team === 'green' &&
          s.spec.ephemeralRunnerMetadata?.labels?.['runner-label'] === 'r2'
          ? s
          : undefined;
      },
      { description: 'the EphemeralRunnerSet with the new labels and runner metadata' },
    );
    expect(updated.metadata?.uid).toBe(ers.metadata?.uid);
    await f.scale(name, 2, 2);
    const runners = await waitForRunners(f, name, (r) => r.length === 2, 'a second runner');
    const second = runners.find((r) => r.metadata?.name !== first.metadata?.name);
    expect(second?.metadata?.labels).toMatchObject({ team: 'green', 'runner-label': 'r2' });
  });
});
