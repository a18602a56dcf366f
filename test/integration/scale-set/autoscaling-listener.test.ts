import type {
  CoreV1Event,
  V1ConfigMap,
  V1Pod,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import {
  AUTOSCALING_LISTENER_FINALIZER,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
  ListenerConfig,
  ListenerDefaults,
  autoscalingListenerName,
} from '@aro/api';
import {
  ConfigMapKind,
  EventKind,
  KubeClient,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isForbidden,
} from '@aro/kube';
import type { AutoscalingListenerModuleOptions } from '@aro/controllers';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { TEST_CA_A } from '../../../libs/secrets/src/testing/certificates';
import { kubeConfigForUser, podEvicted, setPodStatus, waitFor } from '../../harness';
import {
  GITHUB_SECRET,
  LISTENER_IMAGE,
  ScaleSetFixture,
  runnerPodTemplate,
  scaleSetSuite,
  uniqueName,
} from './fixture';

jest.setTimeout(180_000);

type KubeObjectWithMeta = {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
};

describe('AutoscalingListener controller', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  /**
   * The app's graph. `withListenerImage` false plays a controller without
   * CONTROLLER_MANAGER_CONTAINER_IMAGE: its AutoscalingRunnerSet controller makes no listener, so a
   * test can make one by hand and have it stay deleted.
   */
  async function start(
    withListenerImage = true,
    env: Record<string, string> = {},
    listener: Partial<AutoscalingListenerModuleOptions> = {},
  ) {
    f = await suite.start({
      env: withListenerImage ? env : { ...env, CONTROLLER_MANAGER_CONTAINER_IMAGE: '' },
      listener: {
        restartBackoffBaseMs: 2_000,
        restartBackoffMaxMs: 16_000,
        deletionPollMs: 200,
        metricsAddr: ':8080',
        metricsEndpoint: '/metrics',
        ...listener,
      },
    });
  }

  async function newScaleSet(
    change?: (ars: AutoscalingRunnerSet) => void,
    name = uniqueName('lst'),
  ): Promise<{ ars: AutoscalingRunnerSet; listener: string }> {
    const ars: AutoscalingRunnerSet = {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: { name, namespace: f.namespace },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        minRunners: 1,
        maxRunners: 4,
        template: { spec: runnerPodTemplate() },
      },
    };
    change?.(ars);
    await f.kube.create(AutoscalingRunnerSetKind, ars);
    return {
      ars,
      listener: autoscalingListenerName(name, f.namespace, ars.spec.runnerGroup ?? '', f.configUrl),
    };
  }

  const pod = (name: string) => f.read<V1Pod>(PodKind, name, f.controllerNamespace);
  const listenerObject = (name: string) =>
    f.read<AutoscalingListener>(AutoscalingListenerKind, name, f.controllerNamespace);
  /** `aro_listener_config_builds_total` of this test's app, by reason. */
  const configBuilds = async (): Promise<Record<string, number>> => {
    const metric = await f.registry.getSingleMetric('aro_listener_config_builds_total')?.get();
    return Object.fromEntries((metric?.values ?? []).map((v) => [String(v.labels.reason), v.value]));
  };
  /** Reconciles of the listener controller so far (evidence that it looked). */
  const listenerPasses = async (): Promise<number> => {
    const metric = await f.registry.getSingleMetric('controller_runtime_reconcile_total')?.get();
    return (metric?.values ?? [])
      .filter((v) => v.labels.controller === 'autoscalinglistener')
      .reduce((sum, v) => sum + v.value, 0);
  };
  const configOf = async (name: string): Promise<ListenerConfig | undefined> => {
    const secret = await f.read<V1Secret>(SecretKind, `${name}-config`, f.controllerNamespace);
    const data = secret?.data?.[ListenerDefaults.configSecretKey];
    return data ? (JSON.parse(Buffer.from(data, 'base64').toString()) as ListenerConfig) : undefined;
  };

  it('creates the listener pod, its ServiceAccount, Role, RoleBinding and config secret (upstream: create; TLS cert and proxy in config)', async () => {
    await start();
    await f.kube.create<V1ConfigMap>(ConfigMapKind, {
      metadata: { name: 'ca', namespace: f.namespace },
      data: { 'ca.crt': TEST_CA_A },
    });
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'proxy-creds', namespace: f.namespace },
      stringData: { username: 'u', password: 'p' },
    });
    const { ars, listener } = await newScaleSet((a) => {
      a.spec.githubServerTLS = { certificateFrom: { configMapKeyRef: { name: 'ca', key: 'ca.crt' } } };
      a.spec.proxy = {
        https: { url: 'http://proxy.example:3128', credentialSecretRef: 'proxy-creds' },
        noProxy: ['127.0.0.1'],
      };
    });
    const p = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    expect(p.spec).toMatchObject({
      serviceAccountName: listener,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 60,
      nodeSelector: { 'kubernetes.io/os': 'linux' },
    });
    const container = p.spec!.containers[0];
    expect(container).toMatchObject({
      name: 'listener',
      image: LISTENER_IMAGE,
      command: [...ListenerDefaults.command],
    });
    expect(container.env).toContainEqual({
      name: 'LISTENER_CONFIG_PATH',
      value: ListenerDefaults.configPath,
    });
    expect(container.ports).toEqual([{ name: 'metrics', containerPort: 8080, protocol: 'TCP' }]);
    expect(container.volumeMounts?.[0]).toMatchObject({ mountPath: '/etc/gha-listener', readOnly: true });
    expect(p.spec!.volumes?.find((v) => v.secret)?.secret?.secretName).toBe(`${listener}-config`);
    expect((await listenerObject(listener))?.metadata?.finalizers).toContain(AUTOSCALING_LISTENER_FINALIZER);

    expect(await f.read<V1ServiceAccount>(ServiceAccountKind, listener, f.controllerNamespace)).toBeDefined();
    const role = await f.read<V1Role>(RoleKind, listener);
    expect(role?.rules).toEqual([
      {
        apiGroups: ['actions.github.com'],
        resources: ['ephemeralrunnersets'],
        resourceNames: [ars.metadata!.name!],
        verbs: ['patch'],
      },
      {
        apiGroups: ['actions.github.com'],
        resources: ['ephemeralrunners', 'ephemeralrunners/status'],
        verbs: ['patch'],
      },
    ]);
    const binding = await f.read<V1RoleBinding>(RoleBindingKind, listener);
    expect(binding?.subjects).toEqual([
      { kind: 'ServiceAccount', name: listener, namespace: f.controllerNamespace },
    ]);

    const config = await configOf(listener);
    expect(config).toMatchObject({
      configure_url: f.configUrl,
      github_token: DEFAULT_PAT,
      ephemeral_runner_set_namespace: f.namespace,
      ephemeral_runner_set_name: ars.metadata!.name,
      min_runners: 1,
      max_runners: 4,
      runner_scale_set_name: ars.metadata!.name,
      metrics_addr: ':8080',
      metrics_endpoint: '/metrics',
      proxy: { https: 'http://u:p@proxy.example:3128/', no_proxy: ['127.0.0.1'] },
    });
    expect(config?.runner_scale_set_id).toBeGreaterThan(0);
    expect(config?.server_root_ca).toContain('BEGIN CERTIFICATE');
  });

  it("grants the listener's ServiceAccount exactly: patch its EphemeralRunnerSet, patch runners and their status", async () => {
    await start();
    // Short: the ServiceAccount's user name must fit a certificate's 64-character common name.
    const { ars, listener } = await newScaleSet(undefined, `l${Date.now() % 1_000_000}`);
    await waitFor(() => f.read(RoleBindingKind, listener), { description: 'the RoleBinding' });
    await waitFor(() => f.read(EphemeralRunnerSetKind, ars.metadata!.name!), {
      description: 'the EphemeralRunnerSet',
    });
    const kc = await kubeConfigForUser(`system:serviceaccount:${f.controllerNamespace}:${listener}`, [
      'system:serviceaccounts',
    ]);
    const asListener = new KubeClient(kc);
    await waitFor(
      async () => {
        await asListener.mergePatch(EphemeralRunnerSetKind, f.namespace, ars.metadata!.name!, {
          spec: { replicas: 1, patchID: 1 },
        });
        return true;
      },
      { description: 'the listener may patch its EphemeralRunnerSet' },
    );
    const refused = async (fn: () => Promise<unknown>) =>
      fn().then(
        () => false,
        (err: unknown) => isForbidden(err),
      );
    expect(
      await refused(() => asListener.get(EphemeralRunnerSetKind, f.namespace, ars.metadata!.name!)),
    ).toBe(true);
    expect(await refused(() => asListener.list(SecretKind, { namespace: f.namespace }))).toBe(true);
    expect(
      await refused(() =>
        asListener.create(PodKind, {
          metadata: { name: 'x', namespace: f.namespace },
          spec: { containers: [{ name: 'x', image: 'x' }] },
        }),
      ),
    ).toBe(true);
  });

  it('recreates an ended or evicted listener pod with a growing backoff, reason on status and an Event (#4656)', async () => {
    await start();
    const { ars, listener } = await newScaleSet();
    const first = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    const configUid = (await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace))
      ?.metadata?.uid;
    await runnerContainerRunningFor(first);
    await waitFor(
      async () =>
        (await f.registry.getSingleMetricAsString('gha_controller_running_listeners')).includes(
          `name="${ars.metadata!.name}"`,
        ) &&
        (await f.registry.getSingleMetricAsString('gha_controller_running_listeners')).match(
          new RegExp(`name="${ars.metadata!.name}"[^}]*} 1`),
        ) !== null,
      { description: 'running_listeners 1' },
    );

    // The listener container exits (e.g. a revoked token): the pod is recreated, not at once.
    await setPodStatus(f.controllerNamespace, listener, (p) => ({
      ...p.status,
      phase: 'Failed',
      containerStatuses: [
        {
          name: 'listener',
          image: LISTENER_IMAGE,
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { terminated: { exitCode: 1, reason: 'Error' } },
        },
      ],
    }));
    const status1 = await waitFor(
      async () => {
        const l = await listenerObject(listener);
        return l?.status?.restarts === 1 ? l.status : undefined;
      },
      { description: 'restarts 1' },
    );
    expect(status1).toMatchObject({ reason: 'ListenerPodEnded' });
    expect(status1.message).toContain('exited with code 1');
    const second = await waitFor(
      async () => {
        const p = await pod(listener);
        return p && p.metadata?.uid !== first.metadata?.uid ? p : undefined;
      },
      { description: 'a new listener pod' },
    );
    // Not at once: the new pod came at least the backoff (2 s) after the failure was recorded. The
    // creation timestamp has whole seconds, so more than 1 s always shows.
    const waited =
      new Date(second.metadata!.creationTimestamp!).getTime() - new Date(status1.lastRestartTime!).getTime();
    expect(waited).toBeGreaterThanOrEqual(1_000);

    // Evicted next: a second failure in a row, a longer wait.
    await podEvicted(f.controllerNamespace, listener);
    const status2 = await waitFor(
      async () => {
        const l = await listenerObject(listener);
        return l?.status?.restarts === 2 ? l.status : undefined;
      },
      { description: 'restarts 2' },
    );
    expect(status2.reason).toBe('ListenerPodEvicted');
    const third = await waitFor(
      async () => {
        const p = await pod(listener);
        return p && p.metadata?.uid !== second.metadata?.uid ? p : undefined;
      },
      { description: 'a third listener pod', timeoutMs: 60_000 },
    );
    const waited2 =
      new Date(third.metadata!.creationTimestamp!).getTime() - new Date(status2.lastRestartTime!).getTime();
    // Twice the wait for the second failure in a row (4 s; 3 s in whole seconds).
    expect(waited2).toBeGreaterThanOrEqual(3_000);
    // The config secret outlives the pods (upstream: pod re-created but config secret persisted).
    expect(
      (await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace))?.metadata?.uid,
    ).toBe(configUid);
    const events = (await f.list<CoreV1Event>(EventKind, f.controllerNamespace)).filter(
      (e) => e.involvedObject?.name === listener,
    );
    expect(events.map((e) => e.reason)).toEqual(
      expect.arrayContaining(['ListenerPodEnded', 'ListenerPodEvicted']),
    );
  });

  it('brings a rotated credential into the config secret and recreates the pod, with no other event (upstream: config secret change updates the listener)', async () => {
    await start(true, {}, { credentialRefreshIntervalMs: 1_000 });
    const { listener } = await newScaleSet();
    const first = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    await waitFor(async () => (await configOf(listener))?.github_token === DEFAULT_PAT, {
      description: 'the first token in the config',
    });
    // Nothing but the Secret changes: Secrets are not watched, the listener's periodic refresh finds it.
    await f.kube.mergePatch(SecretKind, f.namespace, GITHUB_SECRET, {
      stringData: { github_token: `${DEFAULT_PAT}-rotated` },
    });
    await waitFor(async () => (await configOf(listener))?.github_token === `${DEFAULT_PAT}-rotated`, {
      description: 'the rotated token in the config',
    });
    await waitFor(
      async () => {
        const p = await pod(listener);
        return p && p.metadata?.uid !== first.metadata?.uid;
      },
      { description: 'a new pod for the new config' },
    );
    const builds = await configBuilds();
    expect(builds.refresh ?? 0).toBeGreaterThan(0);
  });

  it('reads the credential Secret only when the config must be built, not on every pass', async () => {
    // A refresh interval longer than the test: every build seen here has another reason.
    await start(true, {}, { credentialRefreshIntervalMs: 60 * 60_000 });
    const { listener } = await newScaleSet();
    const p = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    await runnerContainerRunningFor(p);
    await waitFor(
      async () =>
        (await listenerObject(listener))?.status?.conditions?.find(
          (c) => c.type === 'ListenerRunning' && c.status === 'True',
        ),
      { description: 'ListenerRunning True' },
    );
    const before = await configBuilds();
    expect(before.new).toBe(1);
    // Passes that change nothing the config is made of: touches of the listener, the pod's status.
    const passesBefore = await listenerPasses();
    for (let i = 0; i < 3; i++) {
      await f.kube.mergePatch(AutoscalingListenerKind, f.controllerNamespace, listener, {
        metadata: { labels: { touched: String(i) } },
      });
      await waitFor(async () => (await listenerPasses()) >= passesBefore + i + 1, {
        description: `the controller's pass after touch ${i + 1}`,
      });
    }
    expect(await configBuilds()).toEqual(before);

    // The config Secret deleted (no event: Secrets are not watched): the next pass builds it again.
    await f.kube.delete(SecretKind, f.controllerNamespace, `${listener}-config`);
    await f.kube.mergePatch(AutoscalingListenerKind, f.controllerNamespace, listener, {
      metadata: { labels: { touched: 'after-delete' } },
    });
    await waitFor(async () => (await configBuilds()).missing === 1, {
      description: 'a build for the missing config',
    });
    await waitFor(() => configOf(listener), { description: 'the config secret back' });
  });

  it('merges the listenerTemplate into the listener pod and propagates labels and annotations, less the excluded prefixes (upstream: metadata propagation; customization; template modification)', async () => {
    await start(true, { EXCLUDE_LABEL_PROPAGATION_PREFIXES: 'argocd.argoproj.io/,excluded.example.com/' });
    const meta = (what: string) => ({ labels: { [what]: 'yes' }, annotations: { [`${what}-note`]: 'yes' } });
    const { ars, listener } = await newScaleSet((a) => {
      a.metadata!.labels = {
        team: 'blue',
        'argocd.argoproj.io/instance': 'runners',
        'excluded.example.com/tier': 'gold',
      };
      a.spec.autoscalingListener = {
        labels: { 'listener-label': 'l', 'excluded.example.com/listener': 'no' },
        annotations: { 'listener-annotation': 'a' },
      };
      a.spec.listenerServiceAccountMetadata = meta('sa');
      a.spec.listenerRoleMetadata = meta('role');
      a.spec.listenerRoleBindingMetadata = meta('binding');
      a.spec.listenerConfigSecretMetadata = meta('config');
      a.spec.listenerTemplate = {
        metadata: {
          // `team` is the listener's already: the generated value wins, as upstream's merge does.
          labels: { 'template-label': 't', team: 'from-template' },
          annotations: { 'template-annotation': 't' },
        },
        spec: {
          nodeSelector: { pool: 'listeners' },
          tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'listeners', effect: 'NoSchedule' }],
          securityContext: { runAsNonRoot: true, runAsUser: 1000 },
          serviceAccountName: 'not-the-listeners',
          containers: [
            {
              name: 'listener',
              resources: { limits: { cpu: '250m', memory: '128Mi' } },
              env: [{ name: 'EXTRA', value: '1' }],
              securityContext: { readOnlyRootFilesystem: true },
            },
            { name: 'sidecar', image: 'busybox:1.36', command: ['sleep', 'infinity'] },
          ],
          volumes: [{ name: 'scratch', emptyDir: {} }],
        },
      };
    });
    const excluded = (labels: Record<string, string> | undefined) =>
      Object.keys(labels ?? {}).filter(
        (k) => k.startsWith('argocd.argoproj.io/') || k.startsWith('excluded.example.com/'),
      );

    // The listener object: the set's labels and the listener metadata, less the excluded prefixes.
    const l = await waitFor(() => listenerObject(listener), {
      description: 'the listener',
      timeoutMs: 60_000,
    });
    expect(l.metadata?.labels).toMatchObject({
      team: 'blue',
      'listener-label': 'l',
      'app.kubernetes.io/component': 'runner-scale-set-listener',
    });
    expect(excluded(l.metadata?.labels)).toEqual([]);
    expect(l.metadata?.annotations).toMatchObject({ 'listener-annotation': 'a' });

    // The pod: the listener's labels, then the template's where the listener has none.
    const p = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    expect(p.metadata?.labels).toMatchObject({
      team: 'blue',
      'listener-label': 'l',
      'template-label': 't',
      'app.kubernetes.io/component': 'runner-scale-set-listener',
      'actions.github.com/scale-set-name': ars.metadata!.name,
    });
    expect(excluded(p.metadata?.labels)).toEqual([]);
    expect(p.metadata?.annotations).toMatchObject({ 'template-annotation': 't' });
    expect(p.spec).toMatchObject({
      nodeSelector: { pool: 'listeners' },
      securityContext: { runAsNonRoot: true, runAsUser: 1000 },
      // What the controller must own: its ServiceAccount, never restarted in place.
      serviceAccountName: listener,
      restartPolicy: 'Never',
    });
    expect(p.spec?.tolerations).toContainEqual(
      expect.objectContaining({ key: 'dedicated', value: 'listeners', effect: 'NoSchedule' }),
    );
    const [main, ...others] = p.spec!.containers;
    expect(main).toMatchObject({
      name: 'listener',
      image: LISTENER_IMAGE,
      command: [...ListenerDefaults.command],
      resources: { limits: { cpu: '250m', memory: '128Mi' } },
      securityContext: { readOnlyRootFilesystem: true },
    });
    expect(main.env).toEqual(
      expect.arrayContaining([
        { name: 'LISTENER_CONFIG_PATH', value: ListenerDefaults.configPath },
        { name: 'EXTRA', value: '1' },
      ]),
    );
    expect(main.volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/etc/gha-listener' }));
    expect(others.map((c) => c.name)).toEqual(['sidecar']);
    expect(p.spec?.volumes?.map((v) => v.name)).toEqual(expect.arrayContaining(['scratch']));
    expect(p.spec?.volumes?.find((v) => v.secret)?.secret?.secretName).toBe(`${listener}-config`);

    // What the listener runs with carries the metadata the set gives each of them.
    const owned: Array<[string, KubeObjectWithMeta | undefined]> = [
      ['sa', await f.read<V1ServiceAccount>(ServiceAccountKind, listener, f.controllerNamespace)],
      ['role', await f.read<V1Role>(RoleKind, listener)],
      ['binding', await f.read<V1RoleBinding>(RoleBindingKind, listener)],
      ['config', await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace)],
    ];
    for (const [what, object] of owned) {
      expect([what, object?.metadata?.labels?.[what]]).toEqual([what, 'yes']);
      expect([what, object?.metadata?.annotations?.[`${what}-note`]]).toEqual([what, 'yes']);
    }

    // The set and its runners: the same labels, less the excluded prefixes.
    const ers = await waitFor(() => f.runnerSet(ars.metadata!.name!), {
      description: 'the EphemeralRunnerSet',
    });
    expect(ers.metadata?.labels).toMatchObject({ team: 'blue' });
    expect(excluded(ers.metadata?.labels)).toEqual([]);

    // A template change reaches a new pod.
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, ars.metadata!.name!, {
      spec: { listenerTemplate: { spec: { nodeSelector: { pool: 'listeners-2' } } } },
    });
    const changed = await waitFor(
      async () => {
        const next = await pod(listener);
        return next?.spec?.nodeSelector?.pool === 'listeners-2' ? next : undefined;
      },
      { description: 'a listener pod with the new nodeSelector', timeoutMs: 60_000 },
    );
    expect(changed.metadata?.uid).not.toBe(p.metadata?.uid);
    expect(changed.spec?.containers.map((c) => c.name)).toEqual(['listener', 'sidecar']);
  });

  it('recreates a deleted listener pod at once, keeping its config secret, and counts no failure (upstream: re-create on pod delete)', async () => {
    await start();
    const { listener } = await newScaleSet();
    const first = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    const configUid = (await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace))
      ?.metadata?.uid;
    await runnerContainerRunningFor(first);
    // Evidence that the controller saw the pod run before it goes.
    await waitFor(
      async () =>
        (await listenerObject(listener))?.status?.conditions?.find(
          (c) => c.type === 'ListenerRunning' && c.status === 'True',
        ),
      { description: 'ListenerRunning True' },
    );
    // Not bound to a node, so the apiserver removes it at once, as a kubelet would a deleted pod.
    await f.kube.delete(PodKind, f.controllerNamespace, listener);
    const second = await waitFor(
      async () => {
        const p = await pod(listener);
        return p && p.metadata?.uid !== first.metadata?.uid ? p : undefined;
      },
      { description: 'a new listener pod', timeoutMs: 60_000 },
    );
    expect(second.spec?.containers[0].name).toBe('listener');
    expect(
      (await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace))?.metadata?.uid,
    ).toBe(configUid);
    // A deleted pod did not fail: no restart counted, so no backoff grows from it.
    expect((await listenerObject(listener))?.status?.restarts ?? 0).toBe(0);
  });

  it('on deletion removes the pod, config secret, ServiceAccount, Role and RoleBinding (upstream: delete cleanup)', async () => {
    // No listener image: the AutoscalingRunnerSet controller makes no listener of its own, so the one
    // made here stays deleted.
    await start(false);
    const { ars, listener } = await newScaleSet();
    // The app started without the image all the same; the scale set says why it has no listener.
    const refused = await waitFor(
      async () => {
        const current = await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, ars.metadata!.name!);
        return current?.status?.conditions?.find(
          (c) => c.type === 'ListenerConfigured' && c.reason === 'ListenerImageMissing',
        );
      },
      { description: 'the ListenerImageMissing condition on the scale set', timeoutMs: 60_000 },
    );
    expect(refused.status).toBe('False');
    expect(refused.message).toContain('CONTROLLER_MANAGER_CONTAINER_IMAGE');
    const warning = await waitFor(
      async () =>
        (await f.list<CoreV1Event>(EventKind)).find(
          (e) => e.involvedObject?.name === ars.metadata!.name && e.reason === 'ListenerImageMissing',
        ),
      { description: 'the ListenerImageMissing Warning Event' },
    );
    expect(warning.type).toBe('Warning');
    expect(await listenerObject(listener)).toBeUndefined();
    await f.kube.create<AutoscalingListener>(AutoscalingListenerKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingListener',
      metadata: { name: listener, namespace: f.controllerNamespace },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        runnerScaleSetId: 1,
        autoscalingRunnerSetNamespace: f.namespace,
        autoscalingRunnerSetName: ars.metadata!.name,
        ephemeralRunnerSetName: ars.metadata!.name,
        minRunners: 0,
        maxRunners: 2,
        image: LISTENER_IMAGE,
      },
    });
    const p = await waitFor(() => pod(listener), { description: 'the listener pod', timeoutMs: 60_000 });
    await runnerContainerRunningFor(p);
    await f.kube.delete(AutoscalingListenerKind, f.controllerNamespace, listener);
    await waitFor(async () => (await listenerObject(listener)) === undefined, {
      description: 'the listener gone',
    });
    expect(await pod(listener)).toBeUndefined();
    expect(await f.read(SecretKind, `${listener}-config`, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(ServiceAccountKind, listener, f.controllerNamespace)).toBeUndefined();
    expect(await f.read(RoleKind, listener)).toBeUndefined();
    expect(await f.read(RoleBindingKind, listener)).toBeUndefined();
  });

  async function runnerContainerRunningFor(p: V1Pod) {
    await setPodStatus(f.controllerNamespace, p.metadata!.name!, (current) => ({
      ...current.status,
      phase: 'Running',
      containerStatuses: [
        {
          name: 'listener',
          image: LISTENER_IMAGE,
          imageID: '',
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: new Date() } },
        },
      ],
    }));
  }
});
