import type { V1Pod, V1Role, V1RoleBinding, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import { AutoscalingListener, AutoscalingListenerKind } from '@aro/api';
import type { ActionsServiceClient } from '@aro/actions';
import {
  type KubeClient,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  isNotFound,
} from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import { FAKE_NODE_NAME, finishPodDeletion, setPodStatus } from '../../harness/pod-lifecycle';
import {
  GROUP_VERSION,
  UPSTREAM_IMAGE,
  Upstream,
  controllerRef,
  create,
  upstreamListenerName,
} from './upstream-meta';

export interface UpstreamListenerParams {
  namespace: string;
  controllerNamespace: string;
  arsName: string;
  ersName: string;
  configUrl: string;
  scaleSetId: number;
  maxRunners: number;
  chartSecret: string;
  arsLabels: Record<string, string>;
  head: boolean;
  /**
   * The listener's name when it is not upstream's (a listener another controller, or an older ARO,
   * made for the same scale set); upstream's name by default.
   */
  listenerName?: string;
}

/**
 * The listener as upstream leaves it (newAutoscalingListener and its resources, resourcebuilder.go):
 * the AutoscalingListener, its ServiceAccount, Role and RoleBinding (in the runners' namespace), its
 * `config.json` Secret and its running pod, and the message session its process opened.
 */
export async function writeUpstreamListener(
  kube: KubeClient,
  actions: ActionsServiceClient,
  p: UpstreamListenerParams,
): Promise<{ listenerName: string; sessionId: string }> {
  const { namespace, controllerNamespace, arsName, ersName, configUrl, head } = p;
  const hashAnnotation = (value: string): Record<string, string> =>
    head ? { [Upstream.integrityHash]: value } : {};
  const listenerName = p.listenerName ?? upstreamListenerName(arsName, namespace, '', configUrl);
  const listenerLabels = {
    ...p.arsLabels,
    'app.kubernetes.io/part-of': 'gha-runner-scale-set',
    'app.kubernetes.io/component': 'runner-scale-set-listener',
  };
  const listener = await create<AutoscalingListener>(kube, AutoscalingListenerKind, {
    apiVersion: GROUP_VERSION,
    kind: 'AutoscalingListener',
    metadata: {
      name: listenerName,
      namespace: controllerNamespace,
      labels: listenerLabels,
      annotations: head
        ? { [Upstream.integrityHash]: 'k8v2n7b4t6' }
        : {
            'actions.github.com/runner-spec-hash': 'k8v2n7b4t6',
            'actions.github.com/values-hash': 'c0ffee'.repeat(10).slice(0, 63),
          },
      finalizers: [Upstream.listenerFinalizer],
    },
    spec: {
      githubConfigUrl: configUrl,
      githubConfigSecret: p.chartSecret,
      runnerScaleSetId: p.scaleSetId,
      autoscalingRunnerSetNamespace: namespace,
      autoscalingRunnerSetName: arsName,
      ephemeralRunnerSetName: ersName,
      minRunners: 0,
      maxRunners: p.maxRunners,
      image: UPSTREAM_IMAGE,
    },
  });
  const listenerRef = controllerRef(listener, 'AutoscalingListener');
  const roleLabels = {
    ...listenerLabels,
    'auto-scaling-listener-namespace': controllerNamespace,
    'auto-scaling-listener-name': listenerName,
  };
  await create<V1ServiceAccount>(kube, ServiceAccountKind, {
    metadata: {
      name: listenerName,
      namespace: controllerNamespace,
      labels: listenerLabels,
      annotations: hashAnnotation('f6h2j9k4l7'),
      ownerReferences: [listenerRef],
    },
  });
  await create<V1Role>(kube, RoleKind, {
    metadata: {
      name: listenerName,
      namespace,
      labels: roleLabels,
      annotations: hashAnnotation('p4r7s2t9v5'),
    },
    rules: [
      {
        apiGroups: ['actions.github.com'],
        resources: ['ephemeralrunnersets'],
        resourceNames: [ersName],
        verbs: ['patch'],
      },
      {
        apiGroups: ['actions.github.com'],
        resources: ['ephemeralrunners', 'ephemeralrunners/status'],
        verbs: ['patch'],
      },
    ],
  });
  await create<V1RoleBinding>(kube, RoleBindingKind, {
    metadata: {
      name: listenerName,
      namespace,
      labels: roleLabels,
      annotations: hashAnnotation('w8x3z6b2c9'),
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: listenerName },
    subjects: [{ kind: 'ServiceAccount', name: listenerName, namespace: controllerNamespace }],
  });
  // newScaleSetListenerConfig: cmd/ghalistener/config.Config as JSON.
  const listenerConfig = {
    configure_url: configUrl,
    vault_type: '',
    vault_lookup_key: '',
    github_token: DEFAULT_PAT,
    ephemeral_runner_set_namespace: namespace,
    ephemeral_runner_set_name: ersName,
    max_runners: p.maxRunners,
    min_runners: 0,
    runner_scale_set_id: p.scaleSetId,
    runner_scale_set_name: arsName,
    server_root_ca: '',
    log_level: 'debug',
    log_format: 'text',
    metrics_addr: ':8080',
    metrics_endpoint: '/metrics',
    metrics: null,
  };
  await create<V1Secret>(kube, SecretKind, {
    metadata: {
      name: `${listenerName}-config`,
      namespace: controllerNamespace,
      annotations: hashAnnotation('d4g7h2k9m5'),
      ownerReferences: [listenerRef],
    },
    stringData: { 'config.json': JSON.stringify(listenerConfig) },
  });
  await create<V1Pod>(kube, PodKind, {
    metadata: {
      name: listenerName,
      namespace: controllerNamespace,
      labels: listenerLabels,
      annotations: hashAnnotation('n5q8r3t6v2'),
      ownerReferences: [listenerRef],
    },
    spec: {
      // Bound, as a scheduled pod is: its deletion then waits for the kubelet (the test) to finish it.
      nodeName: FAKE_NODE_NAME,
      serviceAccountName: listenerName,
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 60,
      containers: [
        {
          name: 'listener',
          image: UPSTREAM_IMAGE,
          command: ['/ghalistener'],
          env: [{ name: 'LISTENER_CONFIG_PATH', value: '/etc/gha-listener/config.json' }],
          ports: [{ containerPort: 8080, protocol: 'TCP', name: 'metrics' }],
          volumeMounts: [{ name: 'listener-config', mountPath: '/etc/gha-listener', readOnly: true }],
        },
      ],
      volumes: [{ name: 'listener-config', secret: { secretName: `${listenerName}-config` } }],
    },
  });
  await setPodStatus(controllerNamespace, listenerName, (pod) => ({
    phase: 'Running',
    startTime: new Date(),
    containerStatuses: [
      {
        name: 'listener',
        image: UPSTREAM_IMAGE,
        imageID: '',
        ready: true,
        restartCount: 0,
        state: { running: { startedAt: new Date() } },
        containerID: `containerd://${pod.metadata?.uid ?? ''}`,
      },
    ],
  }));
  // The listener's message session (ghalistener: CreateMessageSession, owner = the pod's hostname).
  const session = await actions.createMessageSession(p.scaleSetId, listenerName);

  return { listenerName, sessionId: session.sessionId };
}

export interface PlayedListenerPod {
  /** Resolves once the pod is gone (or the play was stopped). */
  stopped: Promise<void>;
  stop(): void;
}

/**
 * The kubelet and the process of a listener pod written by {@link writeUpstreamListener}: it runs until
 * its pod is deleted, then, as ghalistener does on SIGTERM, deletes its message session and exits; the
 * pod then goes (it is bound to a node, so its deletion waits for this).
 */
export function playUpstreamListenerPod(
  kube: KubeClient,
  actions: ActionsServiceClient,
  pod: { namespace: string; name: string; scaleSetId: number; sessionId: string },
): PlayedListenerPod {
  const abort = new AbortController();
  const read = () =>
    kube
      .get<V1Pod>(PodKind, pod.namespace, pod.name)
      .catch((err: unknown) => (isNotFound(err) ? undefined : Promise.reject(err)));
  const stopped = (async () => {
    const uid = (await kube.get<V1Pod>(PodKind, pod.namespace, pod.name)).metadata?.uid;
    const seen = await waitFor(
      async () => {
        if (abort.signal.aborted) return 'stopped';
        const now = await read();
        if (now?.metadata?.uid !== uid) return 'gone';
        return now?.metadata?.deletionTimestamp ? 'terminating' : undefined;
      },
      { description: `listener pod ${pod.name} to be deleted`, timeoutMs: 300_000, intervalMs: 200 },
    );
    if (seen === 'stopped') return;
    await actions.deleteMessageSession(pod.scaleSetId, pod.sessionId);
    if (seen === 'terminating') await finishPodDeletion(pod.namespace, pod.name);
  })();
  return { stopped, stop: () => abort.abort() };
}
