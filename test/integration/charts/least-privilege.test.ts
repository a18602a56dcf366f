import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  AuthorizationV1Api,
  KubeConfig,
  type V1Deployment,
  type CoreV1Event,
  type V1Lease,
  type V1Pod,
  type V1Secret,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import {
  AUTOSCALING_LISTENER_CONTAINER_NAME,
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import {
  BUSY_RUNNER_LABEL,
  BUSY_RUNNERS_PDB_NAME,
  PodDisruptionBudgetKind,
  ValidatingWebhookConfigurationKind,
} from '@aro/controllers';
import { EventKind, KubeClient, LeaseKind, PodKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import {
  ControlPlane,
  RunnerPlayer,
  readOrUndefined,
  runnerContainerRunning,
  runnerContainerTerminated,
  testKubeConfig,
  waitFor,
} from '../../harness';
import { CRD_PATHS } from '../../harness/global-setup';
import { scaled } from '../../harness/time-scale';
import { ListenerPlayer } from '../../harness/listener-player';
import { SharedListenerReplicas } from '../../harness/shared-listener-replicas';
import { createScaleSet, startTestSimulator } from '../ephemeral-runner/fixture';
import { ContainerProcess, ensureImageAppsBuilt, imageProcess, startContainer } from './chart-process';
import { Manifest, findManifest, helmBinary } from './helm-chart';
import { InstalledCharts, InstallOptions, installCharts, serviceAccountKubeconfig } from './install';

/*
 * Least privilege, proved on the real apiserver: the controller runs as the chart's service account
 * (a TokenRequest token), with exactly the chart's command and env, and takes a runner through its
 * whole life. Its log must hold no Forbidden; and with one rule taken from the rendered ClusterRole,
 * it must, so the proof can fail.
 */

jest.setTimeout(scaled(240_000));

const FORBIDDEN = /forbidden/i;

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * What `identity` may do in `namespace`, as the apiserver answers a SelfSubjectRulesReview: one
 * `verb group/resource[/name]` per granted combination, sorted; every account's own review and
 * discovery rules (authorization.k8s.io, authentication.k8s.io, non-resource URLs) left out.
 */
async function grantedRules(identity: KubeConfig, namespace: string): Promise<string[]> {
  const review = await identity
    .makeApiClient(AuthorizationV1Api)
    .createSelfSubjectRulesReview({ body: { spec: { namespace } } });
  const granted = new Set<string>();
  for (const rule of review.status?.resourceRules ?? []) {
    for (const group of rule.apiGroups ?? []) {
      if (group === 'authorization.k8s.io' || group === 'authentication.k8s.io') continue;
      for (const resource of rule.resources ?? []) {
        for (const verb of rule.verbs) {
          for (const name of rule.resourceNames?.length ? rule.resourceNames : ['']) {
            granted.add(`${verb} ${group || 'core'}/${resource}${name ? `/${name}` : ''}`);
          }
        }
      }
    }
  }
  return [...granted].sort();
}

describe('The charts installed on the apiserver', () => {
  let sim: RunningSimulator;
  let kube: KubeClient;
  // The chart's controller watches every namespace, as installed. On the control plane the other suites
  // share it would reconcile their runners and scale sets too (two controllers on one object) and read
  // their secrets, which the chart rightly does not grant: a Forbidden that says nothing about the chart.
  // So this suite gets a control plane of its own; every harness helper follows ARO_TEST_* to it.
  let plane: ControlPlane | undefined;
  const sharedEnv = {
    ARO_TEST_CONTROL_PLANE: process.env.ARO_TEST_CONTROL_PLANE,
    ARO_TEST_KUBECONFIG: process.env.ARO_TEST_KUBECONFIG,
  };
  let installed: InstalledCharts | undefined;
  let processes: ContainerProcess[] = [];

  /** `work`, failing at once if the replica's process exits first (a command the image lacks, a bad env). */
  async function whileRunning<T>(replica: ContainerProcess, work: Promise<T>): Promise<T> {
    const exited = replica.exited.then((code) => {
      throw new Error(`the controller process ${replica.pod.name} exited with ${code}`);
    });
    // Reported through the race below; an exit after `work` settled (the test's own stop) is no failure.
    exited.catch(() => undefined);
    return Promise.race([work, exited]);
  }

  /** On failure, the test says what the controller processes printed last. */
  async function explained<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      const tails = processes
        .map((p) => `--- ${p.pod.name} (last lines) ---\n${p.output().split('\n').slice(-25).join('\n')}`)
        .join('\n');
      throw new Error(`${err instanceof Error ? err.message : String(err)}\n${tails}`, { cause: err });
    }
  }

  beforeAll(async () => {
    plane = await ControlPlane.start({ crdPaths: CRD_PATHS, log: () => undefined });
    process.env.ARO_TEST_CONTROL_PLANE = plane.infoPath;
    process.env.ARO_TEST_KUBECONFIG = plane.info.kubeconfigPath;
    kube = new KubeClient(testKubeConfig());
    await helmBinary();
    await ensureImageAppsBuilt((line) => process.stderr.write(`[charts] ${line}\n`));
    sim = await startTestSimulator();
  }, 30 * 60_000);
  afterAll(async () => {
    await sim?.stop();
    await plane?.stop();
    for (const [key, value] of Object.entries(sharedEnv)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  afterEach(async () => {
    for (const p of processes) await p.stop();
    processes = [];
    await installed?.uninstall();
    installed = undefined;
  });

  async function install(opts: InstallOptions = {}): Promise<InstalledCharts> {
    installed = await installCharts({
      ...opts,
      configUrl: sim.configUrl({ org: 'octo' }),
      githubToken: DEFAULT_PAT,
    });
    return installed;
  }

  async function startReplica(charts: InstalledCharts, podName: string): Promise<ContainerProcess> {
    const replica = await startContainer(
      charts.deployment,
      'manager',
      { name: podName, namespace: charts.controllerNamespace, serviceAccountName: charts.serviceAccountName },
      charts.kubeconfigPath,
    );
    processes.push(replica);
    return replica;
  }

  /** An EphemeralRunner as the scale set's runner set would make it: the ARS's pod template and secret. */
  async function createRunner(charts: InstalledCharts, name: string): Promise<void> {
    const ars = findManifest(charts.scaleSet, 'AutoscalingRunnerSet') as Manifest & {
      spec: {
        githubConfigUrl: string;
        githubConfigSecret: string;
        template: { metadata?: object; spec: object };
      };
    };
    const template = ars.spec.template;
    await kube.create<EphemeralRunner>(EphemeralRunnerKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunner',
      metadata: { name, namespace: charts.runnerNamespace },
      spec: {
        githubConfigUrl: ars.spec.githubConfigUrl,
        githubConfigSecret: ars.spec.githubConfigSecret,
        runnerScaleSetId: await createScaleSet(sim, `${charts.release}-${name}`),
        ...(template.metadata ? { metadata: template.metadata } : {}),
        spec: template.spec,
      } as EphemeralRunner['spec'],
    });
  }

  /**
   * The busy path, as the chart's rights allow it: the listener reports a job, and the controller marks
   * the runner's pod busy (patch on pods) and creates the namespace's PodDisruptionBudget.
   */
  async function busyPath(ns: string, name: string): Promise<void> {
    const job = sim.startJob(name, { displayName: 'build' });
    await kube.mergePatchStatus(EphemeralRunnerKind, ns, name, { status: { jobId: job.jobId } });
    await waitFor(
      async () => (await kube.get<V1Pod>(PodKind, ns, name)).metadata?.labels?.[BUSY_RUNNER_LABEL] === 'true',
      { description: `the busy label on pod ${ns}/${name}`, timeoutMs: 60_000 },
    );
    await kube.get(PodDisruptionBudgetKind, ns, BUSY_RUNNERS_PDB_NAME);
  }

  it.each([
    ['every namespace (ClusterRole)', (): Record<string, unknown> => ({})],
    [
      'flags.watchSingleNamespace (Roles only)',
      ({ runnerNamespace }: { runnerNamespace: string }): Record<string, unknown> => ({
        'flags.watchSingleNamespace': runnerNamespace,
      }),
    ],
  ])(
    'takes a runner through its whole life as the chart service account, watching %s, and logs no Forbidden',
    (mode, modeValues) =>
      explained(async () => {
        // The defaults (two replicas, so leader election and its Role too), one replica started; the sweep
        // every 2 s so that it demonstrably runs over the runner's scale set before the log is judged.
        const single = mode.startsWith('flags.watchSingleNamespace');
        const charts = await install({
          // Single-namespace mode holds no cluster-scoped object, so an installer with no cluster rights
          // applies it (a cluster-scoped one would be refused).
          namespacedInstaller: single,
          // debug: the controller logs some refusals (a failed Event) only at debug level.
          // events=all: a successful runner then writes Events too, so the Event rule is exercised (the
          // default, failures, writes none on this path).
          controllerValues: (namespaces) => ({
            'flags.orphanSweepIntervalSeconds': 2,
            'flags.logLevel': 'debug',
            'flags.events': 'all',
            ...modeValues(namespaces),
          }),
        });
        const replica = await startReplica(charts, `${charts.release}-0`);
        await whileRunning(
          replica,
          waitFor(async () => (await replica.probe('readinessProbe')).status === 200, {
            description: 'the replica ready (its readinessProbe as rendered)',
            timeoutMs: 120_000,
          }),
        );

        const ns = charts.runnerNamespace;
        const sweepsBefore = sim.callCount('GET agents');
        await createRunner(charts, 'runner-1');
        const pod = await waitFor(() => readOrUndefined(() => kube.get<V1Pod>(PodKind, ns, 'runner-1')), {
          description: 'the runner pod created by the controller',
          timeoutMs: 60_000,
        });
        expect(pod.spec?.serviceAccountName).toBe(`arc-runners-gha-rs-no-permission`);
        await runnerContainerRunning(ns, 'runner-1');
        await waitFor(
          async () =>
            (await kube.get<EphemeralRunner>(EphemeralRunnerKind, ns, 'runner-1')).status?.phase ===
            'Pending',
          { description: 'the EphemeralRunner to report its running pod', timeoutMs: 60_000 },
        );
        await busyPath(ns, 'runner-1');
        // The orphan sweep (every 2 s here) lists this scale set's registrations while its runner exists:
        // it is the part needing the widest reads, so the log is judged only after it ran.
        await waitFor(() => sim.callCount('GET agents') > sweepsBefore, {
          description: "an orphan sweep pass over the runner's scale set",
          timeoutMs: 30_000,
        });
        sim.completeJob(sim.runner('runner-1')?.jobId ?? '', 'succeeded');
        sim.runnerExited('runner-1', 0);
        await runnerContainerTerminated(ns, 'runner-1', 0, { phase: 'Succeeded' });
        await waitFor(
          async () =>
            (await readOrUndefined(() => kube.get<EphemeralRunner>(EphemeralRunnerKind, ns, 'runner-1'))) ===
            undefined,
          { description: 'the finished EphemeralRunner gone', timeoutMs: 60_000 },
        );
        expect(await readOrUndefined(() => kube.get<V1Pod>(PodKind, ns, 'runner-1'))).toBeUndefined();
        expect(await readOrUndefined(() => kube.get<V1Secret>(SecretKind, ns, 'runner-1'))).toBeUndefined();
        expect(sim.runner('runner-1')).toBeUndefined();
        // The Events on the runner were recorded (a refused Event is only a debug line in the log).
        const events = await kube.list<CoreV1Event>(EventKind, {
          namespace: ns,
          fieldSelector: 'involvedObject.name=runner-1',
        });
        expect(events.length).toBeGreaterThan(0);
        // The eviction webhook made its certificate with the chart's rights: the Secret in the
        // controller's namespace and the caBundle of the chart's configuration. In single-namespace mode
        // it is off by default (its configuration and ClusterRole are cluster-scoped): nothing of it is
        // rendered, and the runner's whole life above went without it.
        const webhook = `${charts.deployment.metadata?.name}-eviction-webhook`;
        if (single) {
          expect(charts.controller.filter((m) => m.metadata.name === webhook)).toEqual([]);
          expect(charts.controller.filter((m) => !m.metadata.namespace)).toEqual([]);
          expect(replica.output()).not.toMatch(FORBIDDEN);
          return;
        }
        await waitFor(
          async () =>
            !!(
              await kube.get<V1ValidatingWebhookConfiguration>(
                ValidatingWebhookConfigurationKind,
                '',
                webhook,
              )
            ).webhooks?.[0].clientConfig.caBundle,
          { description: 'the caBundle set by the controller', timeoutMs: 30_000 },
        );
        expect(await kube.get<V1Secret>(SecretKind, charts.controllerNamespace, webhook)).toBeDefined();

        expect(replica.output()).not.toMatch(FORBIDDEN);
      }),
  );

  /**
   * The listeners as the chart and the controller deploy them, each process running the image's
   * `aro-listener` as its own account (a TokenRequest token): `pod`, the kubelet of the listener pods
   * the controller makes (each as the pod's ServiceAccount); `shared`, the replicas of the chart's
   * shared listener Deployment (its container's env, as its ServiceAccount).
   */
  interface PlayedListeners {
    /** The identity of the process serving the scale set, once it has one. */
    identity(): KubeConfig | undefined;
    logs(): string;
    stop(): Promise<void>;
  }

  function playPodListeners(
    charts: InstalledCharts,
    kubeconfigDirs: string[],
  ): PlayedListeners & {
    player: ListenerPlayer;
    pods: Map<string, KubeConfig>;
  } {
    const pods = new Map<string, KubeConfig>();
    const player = ListenerPlayer.start({
      namespace: charts.controllerNamespace,
      kubeconfigFor: async (pod) => {
        const path = await serviceAccountKubeconfig(
          pod.metadata?.namespace ?? '',
          pod.spec?.serviceAccountName ?? '',
        );
        kubeconfigDirs.push(dirname(path));
        const kc = new KubeConfig();
        kc.loadFromFile(path);
        pods.set(pod.metadata?.name ?? '', kc);
        return path;
      },
      processFor: (pod) =>
        imageProcess(
          pod.spec?.containers.find((c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME)?.command ?? [],
        ),
    });
    return {
      player,
      pods,
      identity: () => [...pods.values()][0],
      logs: () => player.history.map((l) => readOrEmpty(l.logPath)).join('\n'),
      stop: () => player.stop(),
    };
  }

  async function playSharedListener(
    charts: InstalledCharts,
    kubeconfigDirs: string[],
    replicas?: number,
  ): Promise<PlayedListeners & { serviceAccount: string; configSecret: string }> {
    const deployment = charts.controller.find(
      (m) => m.kind === 'Deployment' && m.metadata.name !== charts.deployment.metadata?.name,
    ) as unknown as V1Deployment | undefined;
    const container = deployment?.spec?.template.spec?.containers.find((c) => c.name === 'listener');
    if (!deployment || !container) throw new Error('the chart rendered no shared listener Deployment');
    const serviceAccount = deployment.spec?.template.spec?.serviceAccountName ?? '';
    const kubeconfigPath = await serviceAccountKubeconfig(charts.controllerNamespace, serviceAccount);
    kubeconfigDirs.push(dirname(kubeconfigPath));
    const logDir = mkdtempSync(join(tmpdir(), 'aro-shared-listener-'));
    kubeconfigDirs.push(logDir);
    const played = await new SharedListenerReplicas({
      container,
      kubeconfigPath,
      replicas: replicas ?? deployment.spec?.replicas ?? 1,
      prefix: `${deployment.metadata?.name}-replica`,
      logDir,
      processFor: (c) => imageProcess(c.command ?? []),
    }).start();
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const secretRef = container.env?.find((e) => e.name === 'LISTENER_CONFIG_SECRET')?.value ?? '';
    return {
      serviceAccount,
      configSecret: secretRef.split('/')[1] ?? '',
      identity: () => kc,
      logs: () => played.replicas.map((r) => readOrEmpty(r.process.logFile)).join('\n'),
      stop: () => played.stop(),
    };
  }

  it.each([
    ['pod', 'every namespace (ClusterRole)', (): Record<string, unknown> => ({})],
    [
      'pod',
      'flags.watchSingleNamespace (Roles only)',
      ({ runnerNamespace }: { runnerNamespace: string }): Record<string, unknown> => ({
        'flags.watchSingleNamespace': runnerNamespace,
      }),
    ],
    [
      'shared',
      'every namespace (ClusterRole)',
      (): Record<string, unknown> => ({ 'listener.mode': 'shared' }),
    ],
  ] as const)(
    'runs a scale set end to end as installed, listener mode %s, watching %s: jobs flow through a listener holding only its Roles',
    async (listenerMode, _watching, modeValues) => {
      // A simulator of its own: short long polls and jobs started on assignment, as in the listener's
      // end-to-end test, and a scale set no other test of this file touches.
      const service = await startSimulator({
        seed: { timing: { longPollTimeoutMs: 2_000, autoStartJobs: true, sessionIdleTimeoutMs: 10_000 } },
      });
      const kubeconfigDirs: string[] = [];
      let listeners: PlayedListeners | undefined;
      let runners: RunnerPlayer | undefined;
      try {
        await explained(async () => {
          const charts = (installed = await installCharts({
            configUrl: service.configUrl({ org: 'octo' }),
            githubToken: DEFAULT_PAT,
            controllerValues: (namespaces) => ({
              'flags.logLevel': 'debug',
              imagePullSecrets: [{ name: 'registry-credentials' }],
              ...modeValues(namespaces),
            }),
            scaleSetValues: { minRunners: 0, maxRunners: 4 },
          }));
          const ns = charts.runnerNamespace;
          let podListeners: ReturnType<typeof playPodListeners> | undefined;
          let sharedListener: Awaited<ReturnType<typeof playSharedListener>> | undefined;
          if (listenerMode === 'pod') listeners = podListeners = playPodListeners(charts, kubeconfigDirs);
          else listeners = sharedListener = await playSharedListener(charts, kubeconfigDirs);
          runners = new RunnerPlayer({
            kubeConfig: testKubeConfig(),
            namespace: ns,
            service,
            jobDurationMs: 300,
            // An idle runner leaves only when the listener scales it down, as a real one waits for work.
            jobWaitTimeoutMs: 600_000,
          }).start();

          const replica = await startReplica(charts, `${charts.release}-0`);
          const scaleSetId = await whileRunning(
            replica,
            waitFor(
              async () => {
                const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, ns, 'arc-runners');
                const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
                return Number.isInteger(id) && id > 0 ? id : undefined;
              },
              { description: `the scale set id on ${ns}/arc-runners`, timeoutMs: 120_000 },
            ),
          );
          await waitFor(() => service.sessions().find((s) => s.scaleSetId === scaleSetId), {
            description: `the listener of ${ns}/arc-runners to open its session`,
            timeoutMs: 180_000,
          });
          // The listener's identity is not the admin's: it cannot read the runners' secrets.
          const listenerKube = listeners.identity();
          if (!listenerKube) throw new Error('a session is open but no listener process has an identity');
          const asListener = new KubeClient(listenerKube);
          await expect(asListener.list<V1Secret>(SecretKind, { namespace: ns })).rejects.toThrow(FORBIDDEN);
          asListener.close();
          if (podListeners) {
            // The chart's imagePullSecrets reach the listener pod (upstream: --auto-scaler-image-pull-secrets).
            const [listenerPod] = [...podListeners.pods.keys()];
            const listenerPodObject = await kube.get<V1Pod>(PodKind, charts.controllerNamespace, listenerPod);
            expect(listenerPodObject.spec?.imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
            expect(podListeners.player.history.map((l) => l.pod)).toContain(listenerPod);
          }
          if (sharedListener) {
            // Everything the shared listener's account may do, as the apiserver answers it: patch the
            // served set's EphemeralRunnerSet (by name) and its runners (the job fields, as upstream's
            // listener Role), get the one configs Secret (by name); nowhere anything else.
            const [ers] = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: ns });
            expect(await grantedRules(listenerKube, ns)).toEqual([
              'patch actions.github.com/ephemeralrunners',
              'patch actions.github.com/ephemeralrunners/status',
              `patch actions.github.com/ephemeralrunnersets/${ers.metadata?.name}`,
            ]);
            expect(await grantedRules(listenerKube, charts.controllerNamespace)).toEqual([
              `get core/secrets/${sharedListener.configSecret}`,
            ]);
            expect(await grantedRules(listenerKube, 'default')).toEqual([]);
          }

          const jobs = Array.from({ length: 6 }, () => service.enqueueJob({ scaleSetId }));
          await waitFor(() => jobs.every((j) => service.job(j.jobId)?.state === 'completed'), {
            description: `all ${jobs.length} jobs completed`,
            timeoutMs: 300_000,
            intervalMs: 1_000,
          });
          const done = jobs.map((j) => service.job(j.jobId)!);
          expect(done.filter((j) => j.result !== 'succeeded')).toEqual([]);
          expect(new Set(done.map((j) => j.runnerName)).size).toBe(jobs.length);
          expect(done.filter((j) => j.startAttempts !== 1)).toEqual([]);
          expect(runners.errors).toEqual([]);

          // Scaled back to nothing, and nothing left on the service: no job waiting, no registration.
          await waitFor(
            async () => {
              const sets = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: ns });
              const left = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: ns });
              return sets[0]?.spec.replicas === 0 && left.length === 0;
            },
            { description: 'the runner set scaled back to 0 runners', timeoutMs: 120_000 },
          );
          expect(service.jobs({ scaleSetId }).filter((j) => j.state !== 'completed')).toEqual([]);
          await waitFor(() => service.registrations({ scaleSetId }).length === 0, {
            description: `no registration left in scale set ${scaleSetId}`,
            timeoutMs: 60_000,
          });
          expect(replica.output()).not.toMatch(FORBIDDEN);
          expect(listeners.logs()).not.toMatch(FORBIDDEN);
        }).catch((err: unknown) => {
          throw new Error(
            `${err instanceof Error ? err.message : String(err)}\n--- listener processes ---\n` +
              (listeners?.logs() ?? '').split('\n').slice(-40).join('\n'),
            { cause: err },
          );
        });
      } finally {
        await listeners?.stop();
        await runners?.stop();
        await service.stop();
        for (const dir of kubeconfigDirs) rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('logs the Forbidden of the configs read when the shared listener’s Role loses get', async () => {
    const kubeconfigDirs: string[] = [];
    let listener: PlayedListeners | undefined;
    try {
      const charts = await install({
        controllerValues: { 'listener.mode': 'shared', 'flags.logLevel': 'debug' },
        editController: (manifests) => {
          // The shared listener's one rule keeps its Secret but grants list instead of get.
          const role = manifests.find(
            (m) => m.kind === 'Role' && m.metadata.name.endsWith('-shared-listener'),
          ) as Manifest & { rules: Array<{ verbs: string[] }> };
          for (const rule of role.rules) rule.verbs = rule.verbs.map((v) => (v === 'get' ? 'list' : v));
        },
      });
      // No controller: the Secret need not exist, the apiserver refuses the get before it looks.
      const played = await playSharedListener(charts, kubeconfigDirs, 1);
      listener = played;
      await waitFor(() => /cannot get resource \\?"secrets\\?"/.test(played.logs()), {
        description: `the Forbidden of the get on Secret ${played.configSecret} in the shared listener's log`,
        timeoutMs: 120_000,
      });
    } finally {
      await listener?.stop();
      for (const dir of kubeconfigDirs) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('logs the Forbidden when one rule is taken from the rendered ClusterRole', () =>
    explained(async () => {
      const charts = await install({
        controllerValues: { replicaCount: 1 },
        editController: (manifests) => {
          const role = manifests.find((m) => m.kind === 'ClusterRole') as Manifest & {
            rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
          };
          for (const rule of role.rules)
            rule.resources = rule.resources.filter((r) => r !== 'ephemeralrunnersets');
        },
      });
      const replica = await startReplica(charts, `${charts.release}-0`);
      await waitFor(() => FORBIDDEN.test(replica.output()), {
        description: 'a Forbidden in the controller log',
        timeoutMs: 60_000,
      });
      expect(replica.output()).toMatch(/cannot (list|watch) resource \\?"ephemeralrunnersets\\?"/);
    }));

  it('logs the Forbidden of the busy patch when the scale set’s Role loses patch on pods', () =>
    explained(async () => {
      const charts = await install({
        controllerValues: { replicaCount: 1 },
        editScaleSet: (manifests) => {
          for (const role of manifests.filter((m) => m.kind === 'Role')) {
            const rules = (role as Manifest & { rules?: Array<{ resources: string[]; verbs: string[] }> })
              .rules;
            for (const rule of rules ?? []) {
              if (rule.resources.includes('pods')) rule.verbs = rule.verbs.filter((v) => v !== 'patch');
            }
          }
        },
      });
      const replica = await startReplica(charts, `${charts.release}-0`);
      const ns = charts.runnerNamespace;
      await createRunner(charts, 'runner-unpatched');
      await waitFor(() => readOrUndefined(() => kube.get<V1Pod>(PodKind, ns, 'runner-unpatched')), {
        description: 'the runner pod created by the controller',
        timeoutMs: 60_000,
      });
      await runnerContainerRunning(ns, 'runner-unpatched');
      await waitFor(
        async () =>
          (await kube.get<EphemeralRunner>(EphemeralRunnerKind, ns, 'runner-unpatched')).status?.phase ===
          'Pending',
        { description: 'the EphemeralRunner to report its running pod', timeoutMs: 60_000 },
      );
      const job = sim.startJob('runner-unpatched', { displayName: 'build' });
      await kube.mergePatchStatus(EphemeralRunnerKind, ns, 'runner-unpatched', {
        status: { jobId: job.jobId },
      });
      await waitFor(() => /cannot patch resource \\?"pods\\?"/.test(replica.output()), {
        description: 'the Forbidden of the busy patch in the controller log',
        timeoutMs: 60_000,
      });
      const pod = await kube.get<V1Pod>(PodKind, ns, 'runner-unpatched');
      expect(pod.metadata?.labels?.[BUSY_RUNNER_LABEL]).toBeUndefined();
    }));

  it('runs two replicas: one leads, the other is ready as standby and takes over when the leader is killed', () =>
    explained(async () => {
      const charts = await install();
      const env = Object.fromEntries(
        (charts.deployment.spec?.template.spec?.containers[0].env ?? []).map((e) => [e.name, e.value]),
      );
      expect(charts.deployment.spec?.replicas).toBe(2);
      expect(env).toMatchObject({
        LEADER_ELECTION: 'true',
        LEADER_ELECTION_ID: `${charts.release}-gha-rs-controller`,
      });
      const leaseMs = Number(env.LEASE_DURATION_SECONDS) * 1000;
      const retryMs = Number(env.RETRY_PERIOD_SECONDS) * 1000;
      const leaseName = String(env.LEADER_ELECTION_ID);
      const holder = async () =>
        (await readOrUndefined(() => kube.get<V1Lease>(LeaseKind, charts.controllerNamespace, leaseName)))
          ?.spec;

      const startedAt = Date.now();
      const first = await startReplica(charts, `${charts.release}-a`);
      // Nothing to wait out (no holder yet): the time is the process's start, CPU-bound module loading
      // and the caches' first lists, which a loaded machine stretches (13 s measured at load 24).
      await waitFor(async () => (await holder())?.holderIdentity?.startsWith(`${first.pod.name}_`), {
        description: `replica ${first.pod.name} to take the Lease ${charts.controllerNamespace}/${leaseName}`,
        timeoutMs: 60_000,
      });
      process.stderr.write(
        `[charts] the first replica took the Lease ${Date.now() - startedAt} ms after its start\n`,
      );
      const second = await startReplica(charts, `${charts.release}-b`);
      const standby = await waitFor(
        async () => {
          const probe = await second.probe('readinessProbe');
          return probe.status === 200 ? probe : undefined;
        },
        { description: 'the second replica ready as standby', timeoutMs: 60_000 },
      );
      expect(standby.body).toContain('"leader":false');
      expect((await first.probe('readinessProbe')).body).toContain('"leader":true');
      expect((await second.probe('livenessProbe')).status).toBe(200);

      // SIGKILL: no release of the lease, the standby must wait it out.
      const killedAt = Date.now();
      await first.stop('SIGKILL');
      const taken = await waitFor(
        async () => {
          const spec = await holder();
          return spec?.holderIdentity?.startsWith(`${second.pod.name}_`) ? spec : undefined;
        },
        { description: 'the standby to take the Lease over', timeoutMs: leaseMs + 10 * retryMs + 60_000 },
      );
      const handoverMs = new Date(String(taken.acquireTime)).getTime() - killedAt;
      process.stderr.write(
        `[charts] leader killed; standby acquired the Lease ${handoverMs} ms later ` +
          `(lease duration ${leaseMs} ms + retry period ${retryMs} ms = ${leaseMs + retryMs} ms)\n`,
      );
      // The standby counts the lease expired leaseDuration after it last saw it change, which it notices
      // on its next jittered attempt; the acquisition itself is one more jittered attempt away.
      // The lease duration is the product's to keep; the two attempts run on timers a loaded machine
      // fires late, so their part of the bound is at the run's time scale.
      expect(handoverMs).toBeLessThanOrEqual(leaseMs + scaled(2 * (1 + 1.2) * retryMs));
      await waitFor(async () => (await second.probe('readinessProbe')).body.includes('"leader":true'), {
        description: 'the new leader to say so on /readyz',
      });

      // The new leader reconciles.
      await createRunner(charts, 'after-handover');
      await waitFor(
        () => readOrUndefined(() => kube.get<V1Pod>(PodKind, charts.runnerNamespace, 'after-handover')),
        {
          description: 'the runner pod created by the new leader',
          timeoutMs: 60_000,
        },
      );
      expect(first.output() + second.output()).not.toMatch(FORBIDDEN);
    }));
});
