import type { V1Pod, V1Role, V1RoleBinding, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  EphemeralRunnerSpec,
} from '@aro/api';
import { MultiClient } from '@aro/actions';
import {
  type KubeClient,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
} from '@aro/kube';
import { DEFAULT_PAT, type RunningSimulator } from '../../../apps/simulator/src';
import { runnerContainerRunning } from '../../harness/pod-lifecycle';
import { writeUpstreamListener } from './upstream-listener';
import { chartRunnerTemplate, upstreamSerializedRunnerSpec } from './upstream-serialized';
import {
  GROUP_VERSION,
  UPSTREAM_VERSION,
  Upstream,
  controllerRef,
  create,
  withStatus,
} from './upstream-meta';

export { UPSTREAM_IMAGE, UPSTREAM_VERSION, Upstream, upstreamKeepsVersion } from './upstream-meta';

/*
 * The state upstream's controllers (actions-runner-controller at the 1-1 ERS layout, #4516, with the
 * gha-runner-scale-set 0.14.2 chart) leave behind for one scale set with jobs running, written object
 * by object as upstream writes them: names, labels, annotations, finalizers, owner references and
 * status, each from the upstream function named beside it. Only the integrity hashes cannot be
 * reproduced (upstream hashes the Go structs' JSON): they are written in upstream's alphabet, as
 * values no ARO hash can equal, which is what a migrating cluster holds.
 */
/**
 * Which upstream wrote it: `head` names the EphemeralRunnerSet after the scale set and patches it in
 * place (#4516, after 0.14.2); `0.14` (the released 0.14.2) names it `<scale set>-<random>` and
 * stamps runner-spec / change hashes instead of integrity hashes.
 */
export type UpstreamLayout = 'head' | '0.14';

export interface UpstreamScaleSet {
  namespace: string;
  controllerNamespace: string;
  arsName: string;
  /** The EphemeralRunnerSet upstream's runners belong to. */
  ersName: string;
  scaleSetId: number;
  listenerName: string;
  sessionId: string;
  /** Runners with a job running, and the job each holds. */
  busy: Array<{ runner: string; runnerId: number; jobId: string }>;
  /** A runner registered and online without a job (the first of `idleRunners`). */
  idle: { runner: string; runnerId: number };
  idleRunners: Array<{ runner: string; runnerId: number }>;
  /** Chart objects the ARS cleanup annotations name. */
  chartSecret: string;
  chartServiceAccount: string;
  managerRole: string;
}

/**
 * Writes upstream's state for scale set `arsName` in `namespace` (listener in `controllerNamespace`)
 * with `busy` runners running a job each and `idle` idle runners (1 unless given), on the cluster and
 * on the simulator.
 */
export async function writeUpstreamState(
  kube: KubeClient,
  sim: RunningSimulator,
  opts: {
    namespace: string;
    controllerNamespace: string;
    arsName: string;
    busy: number;
    idle?: number;
    minRunners?: number;
    maxRunners: number;
    layout: UpstreamLayout;
  },
): Promise<UpstreamScaleSet> {
  const { namespace, controllerNamespace, arsName } = opts;
  const head = opts.layout === 'head';
  // resourcebuilder.go: HEAD names the set after the ARS; 0.14.2 used GenerateName `<ars>-`.
  const ersName = head ? arsName : `${arsName}-w7x4q`;
  const configUrl = sim.configUrl({ org: 'octo' });
  const fullname = `${arsName}-gha-rs`;
  const chartSecret = `${fullname}-github-secret`;
  const chartServiceAccount = `${fullname}-no-permission`;
  const managerRole = `${fullname}-manager`;

  // ---- the scale set chart (gha-runner-scale-set 0.14.2): labels "gha-runner-scale-set.labels" ----
  const chartLabels = {
    'helm.sh/chart': `gha-rs-${UPSTREAM_VERSION}`,
    'app.kubernetes.io/name': arsName,
    'app.kubernetes.io/instance': arsName,
    [Upstream.versionLabel]: UPSTREAM_VERSION,
    'app.kubernetes.io/managed-by': 'Helm',
    'app.kubernetes.io/part-of': 'gha-rs',
    'actions.github.com/scale-set-name': arsName,
    'actions.github.com/scale-set-namespace': namespace,
  };
  const protectedMeta = (name: string) => ({
    name,
    namespace,
    labels: chartLabels,
    finalizers: [Upstream.cleanupProtection],
  });
  await create<V1Secret>(kube, SecretKind, {
    metadata: protectedMeta(chartSecret),
    stringData: { github_token: DEFAULT_PAT },
  });
  await create<V1ServiceAccount>(kube, ServiceAccountKind, { metadata: protectedMeta(chartServiceAccount) });
  await create<V1Role>(kube, RoleKind, {
    metadata: protectedMeta(managerRole),
    rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'get', 'create', 'delete'] }],
  });
  await create<V1RoleBinding>(kube, RoleBindingKind, {
    metadata: protectedMeta(managerRole),
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: managerRole },
    subjects: [{ kind: 'ServiceAccount', name: 'arc-gha-rs-controller', namespace: controllerNamespace }],
  });

  // ---- the Actions service: createRunnerScaleSet (autoscalingrunnerset_controller.go) ----
  const scaleSet = sim.createScaleSet(
    { org: 'octo' },
    { name: arsName, runnerGroup: 'Default', runnerSetting: { disableUpdate: true } },
  );
  const actions = new MultiClient({ retry: { maxRetries: 0 } }).getClientFor({
    configUrl,
    namespace,
    credentials: { kind: 'pat', token: DEFAULT_PAT },
  });

  const template = chartRunnerTemplate(chartServiceAccount);
  // The AutoscalingRunnerSet as the chart renders it, then as upstream's controller patched it:
  // finalizer, then runner-scale-set-id / name / group annotations and the URL labels, the integrity
  // hash, and its status.
  const ars = await create<AutoscalingRunnerSet>(kube, AutoscalingRunnerSetKind, {
    apiVersion: GROUP_VERSION,
    kind: 'AutoscalingRunnerSet',
    metadata: {
      name: arsName,
      namespace,
      labels: {
        'app.kubernetes.io/component': 'autoscaling-runner-set',
        ...chartLabels,
        'actions.github.com/organization': 'octo',
      },
      annotations: {
        'actions.github.com/values-hash': 'c0ffee'.repeat(10).slice(0, 63),
        'actions.github.com/cleanup-github-secret-name': chartSecret,
        'actions.github.com/cleanup-manager-role-binding': managerRole,
        'actions.github.com/cleanup-manager-role-name': managerRole,
        'actions.github.com/cleanup-no-permission-service-account-name': chartServiceAccount,
        [Upstream.scaleSetIdAnnotation]: String(scaleSet.id),
        [Upstream.scaleSetNameAnnotation]: arsName,
        [Upstream.runnerGroupAnnotation]: 'Default',
        ...(head
          ? { [Upstream.integrityHash]: 'b7c9d5f4x2' }
          : { 'actions.github.com/change-hash': 'b7c9d5f4x2' }),
      },
      finalizers: [Upstream.arsFinalizer],
    },
    spec: {
      githubConfigUrl: configUrl,
      githubConfigSecret: chartSecret,
      maxRunners: opts.maxRunners,
      minRunners: opts.minRunners ?? 0,
      template,
    },
  });

  // ---- the EphemeralRunnerSet: newEphemeralRunnerSet (resourcebuilder.go), serialized by Go ----
  const runnerSpec: EphemeralRunnerSpec = upstreamSerializedRunnerSpec({
    githubConfigUrl: configUrl,
    githubConfigSecret: chartSecret,
    runnerScaleSetId: scaleSet.id,
    serviceAccountName: chartServiceAccount,
  });
  const ersLabels = {
    ...ars.metadata!.labels,
    'app.kubernetes.io/part-of': 'gha-runner-scale-set',
    'app.kubernetes.io/component': 'runner-set',
  };
  const ersAnnotations = {
    [Upstream.runnerGroupAnnotation]: 'Default',
    [Upstream.scaleSetNameAnnotation]: arsName,
  };
  const runnerCount = opts.busy + (opts.idle ?? 1);
  const patchId = 4;
  const ers = await create<EphemeralRunnerSet>(kube, EphemeralRunnerSetKind, {
    apiVersion: GROUP_VERSION,
    kind: 'EphemeralRunnerSet',
    metadata: {
      name: ersName,
      namespace,
      labels: ersLabels,
      annotations: {
        ...ersAnnotations,
        ...(head
          ? { [Upstream.integrityHash]: 'z5q8c4w6m9' }
          : { 'actions.github.com/runner-spec-hash': 'z5q8c4w6m9' }),
      },
      // The finalizer name changed after 0.14.2 (#4516).
      finalizers: [head ? Upstream.ersFinalizer : Upstream.ersFinalizer0142],
      ownerReferences: [controllerRef(ars, 'AutoscalingRunnerSet')],
    },
    // Replicas and patchID as the listener last patched them (one per job, plus the idle runner it
    // asked for before a job came).
    spec: { replicas: runnerCount, patchID: patchId, ephemeralRunnerSpec: runnerSpec },
  });

  const { listenerName, sessionId } = await writeUpstreamListener(kube, actions, {
    namespace,
    controllerNamespace,
    arsName,
    ersName,
    configUrl,
    scaleSetId: scaleSet.id,
    maxRunners: opts.maxRunners,
    chartSecret,
    arsLabels: ars.metadata?.labels ?? {},
    head,
  });

  // ---- the runners: newEphemeralRunner, then the ER controller's JIT secret, pod and status ----
  const runners: Array<{ runner: string; runnerId: number }> = [];
  for (let i = 0; i < runnerCount; i++) {
    const name = `${arsName}-runner-${['k2x7p', 'm4q9z', 'r6t3w', 'v8b5n', 'c2d7f'][i]}`;
    const er = await create<EphemeralRunner>(kube, EphemeralRunnerKind, {
      apiVersion: GROUP_VERSION,
      kind: 'EphemeralRunner',
      metadata: {
        name,
        namespace,
        labels: { ...ersLabels, 'app.kubernetes.io/component': 'runner' },
        annotations: { ...ersAnnotations, [Upstream.patchIdAnnotation]: String(patchId) },
        finalizers: [Upstream.erFinalizer, Upstream.erRegistrationFinalizer],
        ownerReferences: [controllerRef(ers, 'EphemeralRunnerSet')],
      },
      spec: runnerSpec,
    });
    const jit = await actions.generateJitRunnerConfig({ name }, scaleSet.id);
    await create<V1Secret>(kube, SecretKind, {
      metadata: { name, namespace, ownerReferences: [controllerRef(er, 'EphemeralRunner')] },
      stringData: {
        jitToken: jit.encodedJITConfig,
        runnerName: jit.runner.name,
        runnerId: String(jit.runner.id),
        scaleSetId: String(scaleSet.id),
      },
    });
    await create<V1Pod>(kube, PodKind, {
      metadata: {
        name,
        namespace,
        labels: {
          ...er.metadata!.labels,
          'actions-ephemeral-runner': 'True',
          'pod-template-hash': '7d9f8b6c5',
        },
        annotations: er.metadata!.annotations,
        ownerReferences: [controllerRef(er, 'EphemeralRunner')],
      },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            ...template.spec.containers[0],
            env: [
              {
                name: 'ACTIONS_RUNNER_INPUT_JITCONFIG',
                valueFrom: { secretKeyRef: { name, key: 'jitToken' } },
              },
              {
                name: 'GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT',
                value: `actions-runner-controller/${UPSTREAM_VERSION}`,
              },
              { name: 'ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE', value: '1' },
            ],
          },
        ],
      },
    });
    await runnerContainerRunning(namespace, name);
    sim.runnerConnected(name);
    await withStatus(kube, EphemeralRunnerKind, er, {
      phase: 'Running',
      ready: true,
      runnerId: jit.runner.id,
      runnerName: jit.runner.name,
    });
    runners.push({ runner: name, runnerId: jit.runner.id });
  }

  // Jobs in flight: assigned, started on the busy runners; the listener patched each runner's status
  // with the job (ghalistener worker: HandleJobStarted).
  const busy: UpstreamScaleSet['busy'] = [];
  for (const r of runners.slice(0, opts.busy)) {
    const job = sim.startJob(r.runner, { scaleSetId: scaleSet.id });
    await kube.mergePatchStatus<EphemeralRunner>(EphemeralRunnerKind, namespace, r.runner, {
      status: {
        jobRequestId: job.runnerRequestId,
        jobId: job.jobId,
        jobRepositoryName: job.repo,
        jobWorkflowRef: job.workflowRef,
        workflowRunId: job.workflowRunId,
        jobDisplayName: job.displayName,
      },
    });
    busy.push({ ...r, jobId: job.jobId });
  }

  await withStatus(kube, EphemeralRunnerSetKind, ers, {
    currentReplicas: runnerCount,
    pendingEphemeralRunners: 0,
    runningEphemeralRunners: runnerCount,
    failedEphemeralRunners: 0,
    phase: 'Running',
  });
  await withStatus(kube, AutoscalingRunnerSetKind, ars, {
    currentRunners: runnerCount,
    pendingEphemeralRunners: 0,
    runningEphemeralRunners: runnerCount,
    failedEphemeralRunners: 0,
    phase: 'Running',
  });
  await actions.close();
  return {
    namespace,
    controllerNamespace,
    arsName,
    ersName,
    scaleSetId: scaleSet.id,
    listenerName,
    sessionId,
    busy,
    idle: runners[opts.busy],
    idleRunners: runners.slice(opts.busy),
    chartSecret,
    chartServiceAccount,
    managerRole,
  };
}
