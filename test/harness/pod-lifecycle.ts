// There is no kubelet in the test control plane, so nothing ever moves a pod past "created". These helpers
// play the kubelet: they write pods/<name>/status the way a kubelet would for each step of a runner pod's
// life, so that controllers can be tested against the pod states they will meet in a real cluster.
import { randomBytes } from 'node:crypto';
import {
  ApiException,
  CoreV1Api,
  type V1Container,
  type V1ContainerStatus,
  type V1Pod,
  type V1PodCondition,
  type V1PodStatus,
} from '@kubernetes/client-node';
import { testKubeConfig } from './context';
import { waitFor } from './wait-for';

/** The runner pod's main container, by ARC convention. */
export const RUNNER_CONTAINER = 'runner';
/** The node pods are bound to. No Node object backs it: the apiserver does not check, a scheduler would. */
export const FAKE_NODE_NAME = 'aro-test-node';
// Documentation ranges (RFC 5737): the addresses appear in status only, nothing ever connects to them.
const HOST_IP = '192.0.2.10';

type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

function coreApi(): CoreV1Api {
  return testKubeConfig().makeApiClient(CoreV1Api);
}

function podIp(pod: V1Pod): string {
  // Stable per pod, so that replaying a step does not change the IP.
  const uid = pod.metadata?.uid ?? '';
  const byte = (parseInt(uid.replace(/-/g, '').slice(0, 2), 16) || 1) % 250;
  return `198.51.100.${byte + 2}`;
}

function containerId(): string {
  return `containerd://${randomBytes(32).toString('hex')}`;
}

function isNativeSidecar(container: V1Container): boolean {
  return container.restartPolicy === 'Always';
}

function condition(
  type: string,
  status: boolean,
  reason?: string,
  previous?: V1PodCondition[],
): V1PodCondition {
  const statusText = status ? 'True' : 'False';
  const before = previous?.find((c) => c.type === type);
  // A kubelet moves lastTransitionTime only when the status flips.
  const lastTransitionTime = before && before.status === statusText ? before.lastTransitionTime : new Date();
  return { type, status: statusText, ...(reason ? { reason } : {}), lastTransitionTime };
}

function previousStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find(
    (s) => s.name === name,
  );
}

function waiting(container: V1Container, reason: string): V1ContainerStatus {
  return {
    name: container.name,
    image: container.image ?? '',
    imageID: '',
    ready: false,
    started: false,
    restartCount: 0,
    state: { waiting: { reason } },
  };
}

function runningStatus(pod: V1Pod, container: V1Container, ready: boolean): V1ContainerStatus {
  const before = previousStatus(pod, container.name);
  const alreadyRunning = before?.state?.running;
  return {
    name: container.name,
    image: container.image ?? '',
    imageID: `${container.image ?? 'image'}@sha256:${'0'.repeat(64)}`,
    containerID: alreadyRunning ? before?.containerID : containerId(),
    ready,
    started: true,
    restartCount: before?.restartCount ?? 0,
    state: { running: { startedAt: alreadyRunning?.startedAt ?? new Date() } },
  };
}

function terminatedStatus(
  pod: V1Pod,
  container: V1Container,
  exitCode: number,
  reason?: string,
): V1ContainerStatus {
  const before = previousStatus(pod, container.name);
  return {
    name: container.name,
    image: container.image ?? '',
    imageID: before?.imageID || `${container.image ?? 'image'}@sha256:${'0'.repeat(64)}`,
    containerID: before?.containerID ?? containerId(),
    ready: false,
    started: false,
    restartCount: before?.restartCount ?? 0,
    state: {
      terminated: {
        exitCode,
        reason: reason ?? (exitCode === 0 ? 'Completed' : 'Error'),
        startedAt: before?.state?.running?.startedAt ?? new Date(),
        finishedAt: new Date(),
        containerID: before?.containerID ?? undefined,
      },
    },
  };
}

function requireContainer(pod: V1Pod, name: string): V1Container {
  const container = pod.spec?.containers.find((c) => c.name === name);
  if (!container) {
    const names = pod.spec?.containers.map((c) => c.name).join(', ');
    throw new Error(
      `Pod ${pod.metadata?.namespace}/${pod.metadata?.name} has no container named ${name} (it has: ${names})`,
    );
  }
  return container;
}

/**
 * Read-modify-write of pods/<name>/status, retried on a conflict (a controller under test may write the pod
 * at the same time). `mutate` returns the whole new status, as a kubelet computes it.
 */
export async function setPodStatus(
  namespace: string,
  name: string,
  mutate: (pod: V1Pod) => V1PodStatus,
): Promise<V1Pod> {
  const api = coreApi();
  return waitFor(
    async () => {
      const pod = await api.readNamespacedPod({ name, namespace });
      const status = mutate(pod);
      try {
        return await api.replaceNamespacedPodStatus({ name, namespace, body: { ...pod, status } });
      } catch (err) {
        if (err instanceof ApiException && err.code === 409) {
          return undefined;
        }
        const body = err instanceof ApiException ? (err.body as { message?: string })?.message : undefined;
        throw new Error(
          `Writing the status of pod ${namespace}/${name} failed: ${body ?? (err as Error).message}`,
          { cause: err },
        );
      }
    },
    {
      description: `the status of pod ${namespace}/${name} to be written without a conflict`,
      timeoutMs: 10_000,
    },
  );
}

/** Binds the pod to the fake node (as the scheduler would) unless it is bound already. */
async function ensureBound(namespace: string, name: string, nodeName: string): Promise<void> {
  const api = coreApi();
  const pod = await api.readNamespacedPod({ name, namespace });
  if (pod.spec?.nodeName) {
    return;
  }
  await api.createNamespacedPodBinding({
    name,
    namespace,
    body: { metadata: { name, namespace }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } },
  });
}

/**
 * Scheduled, containers being created: binds the pod to a node, PodScheduled=True, phase Pending, every
 * container waiting (ContainerCreating, or PodInitializing behind init containers).
 */
export async function podScheduledAndStarting(
  namespace: string,
  name: string,
  options: { nodeName?: string } = {},
): Promise<V1Pod> {
  await ensureBound(namespace, name, options.nodeName ?? FAKE_NODE_NAME);
  return setPodStatus(namespace, name, (pod) => {
    const inits = pod.spec?.initContainers ?? [];
    const previous = pod.status?.conditions;
    return {
      phase: 'Pending',
      hostIP: HOST_IP,
      hostIPs: [{ ip: HOST_IP }],
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('PodReadyToStartContainers', false, undefined, previous),
        condition(
          'Initialized',
          inits.length === 0,
          inits.length === 0 ? undefined : 'ContainersNotInitialized',
          previous,
        ),
        condition('Ready', false, 'ContainersNotReady', previous),
        condition('ContainersReady', false, 'ContainersNotReady', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      initContainerStatuses: inits.map((c) => waiting(c, 'PodInitializing')),
      containerStatuses: pod.spec!.containers.map((c) =>
        waiting(c, inits.length === 0 ? 'ContainerCreating' : 'PodInitializing'),
      ),
    };
  });
}

/**
 * Running: init containers completed (native sidecars running), every container running, the runner ready
 * unless `ready: false` (other containers always ready); phase Running, pod IP set. Binds the pod first if needed.
 */
export async function runnerContainerRunning(
  namespace: string,
  name: string,
  options: { ready?: boolean; nodeName?: string } = {},
): Promise<V1Pod> {
  const runnerReady = options.ready ?? true;
  await ensureBound(namespace, name, options.nodeName ?? FAKE_NODE_NAME);
  return setPodStatus(namespace, name, (pod) => {
    requireContainer(pod, RUNNER_CONTAINER);
    const previous = pod.status?.conditions;
    const ip = podIp(pod);
    const containerStatuses = pod.spec!.containers.map((c) =>
      runningStatus(pod, c, c.name === RUNNER_CONTAINER ? runnerReady : true),
    );
    const allReady = containerStatuses.every((s) => s.ready);
    return {
      phase: 'Running',
      hostIP: HOST_IP,
      hostIPs: [{ ip: HOST_IP }],
      podIP: ip,
      podIPs: [{ ip }],
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('PodReadyToStartContainers', true, undefined, previous),
        condition('Initialized', true, undefined, previous),
        condition('Ready', allReady, allReady ? undefined : 'ContainersNotReady', previous),
        condition('ContainersReady', allReady, allReady ? undefined : 'ContainersNotReady', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) =>
        isNativeSidecar(c) ? runningStatus(pod, c, true) : terminatedStatus(pod, c, 0),
      ),
      containerStatuses,
    };
  });
}

/**
 * The runner container exited with `exitCode` (reason Completed for 0, Error otherwise). Other containers keep
 * their state; the phase is what a kubelet with restartPolicy Never derives (Succeeded/Failed once every
 * container has exited, Running while one still runs) unless `phase` overrides it. A terminal phase also
 * stops native sidecars, as the kubelet does.
 */
export async function runnerContainerTerminated(
  namespace: string,
  name: string,
  exitCode: number,
  options: { phase?: PodPhase; reason?: string; message?: string } = {},
): Promise<V1Pod> {
  return setPodStatus(namespace, name, (pod) => {
    const runner = requireContainer(pod, RUNNER_CONTAINER);
    const containerStatuses = pod.spec!.containers.map((c) => {
      if (c === runner) {
        return terminatedStatus(pod, c, exitCode);
      }
      const before = previousStatus(pod, c.name);
      return before?.state?.terminated ? before : runningStatus(pod, c, true);
    });
    const exited = containerStatuses.map((s) => s.state?.terminated);
    const derived: PodPhase = exited.every(Boolean)
      ? exited.every((t) => t?.exitCode === 0)
        ? 'Succeeded'
        : 'Failed'
      : 'Running';
    const phase = options.phase ?? derived;
    const terminal = phase === 'Succeeded' || phase === 'Failed';
    const previous = pod.status?.conditions;
    const ip = podIp(pod);
    return {
      phase,
      ...(options.reason ? { reason: options.reason } : {}),
      ...(options.message ? { message: options.message } : {}),
      hostIP: HOST_IP,
      hostIPs: [{ ip: HOST_IP }],
      podIP: ip,
      podIPs: [{ ip }],
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('PodReadyToStartContainers', !terminal, undefined, previous),
        condition('Initialized', true, undefined, previous),
        condition('Ready', false, terminal ? 'PodCompleted' : 'ContainersNotReady', previous),
        condition('ContainersReady', false, terminal ? 'PodCompleted' : 'ContainersNotReady', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) =>
        isNativeSidecar(c) && !terminal ? runningStatus(pod, c, true) : terminatedStatus(pod, c, 0),
      ),
      containerStatuses,
    };
  });
}

/**
 * An init container (`container`, default the first one that is not a native sidecar) exited with
 * `exitCode` (default 1): the ones before it completed, the rest and every container wait in
 * PodInitializing; phase Failed (restartPolicy Never, as runner pods have) or Pending otherwise.
 */
export async function initContainerFailed(
  namespace: string,
  name: string,
  options: { container?: string; exitCode?: number } = {},
): Promise<V1Pod> {
  await ensureBound(namespace, name, FAKE_NODE_NAME);
  return setPodStatus(namespace, name, (pod) => {
    const inits = pod.spec?.initContainers ?? [];
    const failing = options.container
      ? inits.find((c) => c.name === options.container)
      : inits.find((c) => !isNativeSidecar(c));
    if (!failing) {
      throw new Error(
        `Pod ${namespace}/${name} has no init container ${options.container ?? '(that is not a native sidecar)'} to fail`,
      );
    }
    const failingIndex = inits.indexOf(failing);
    const neverRestarts = (pod.spec?.restartPolicy ?? 'Always') === 'Never';
    const previous = pod.status?.conditions;
    return {
      phase: neverRestarts ? 'Failed' : 'Pending',
      hostIP: HOST_IP,
      hostIPs: [{ ip: HOST_IP }],
      podIP: podIp(pod),
      podIPs: [{ ip: podIp(pod) }],
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('PodReadyToStartContainers', true, undefined, previous),
        condition('Initialized', false, 'ContainersNotInitialized', previous),
        condition('Ready', false, neverRestarts ? 'PodFailed' : 'ContainersNotReady', previous),
        condition('ContainersReady', false, neverRestarts ? 'PodFailed' : 'ContainersNotReady', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      initContainerStatuses: inits.map((c, i) => {
        if (i < failingIndex) {
          return isNativeSidecar(c) && !neverRestarts
            ? runningStatus(pod, c, true)
            : terminatedStatus(pod, c, 0);
        }
        return i === failingIndex
          ? terminatedStatus(pod, c, options.exitCode ?? 1)
          : waiting(c, 'PodInitializing');
      }),
      containerStatuses: pod.spec!.containers.map((c) => waiting(c, 'PodInitializing')),
    };
  });
}

/**
 * The node went away under a running pod: phase Failed (reason NodeLost, DisruptionTarget condition as pod
 * GC sets it) while the runner container still shows running, because no kubelet was left to report its end.
 */
export async function nodeLost(
  namespace: string,
  name: string,
  options: { reason?: string; message?: string } = {},
): Promise<V1Pod> {
  await ensureBound(namespace, name, FAKE_NODE_NAME);
  return setPodStatus(namespace, name, (pod) => {
    requireContainer(pod, RUNNER_CONTAINER);
    const previous = pod.status?.conditions;
    const nodeName = pod.spec?.nodeName ?? FAKE_NODE_NAME;
    return {
      ...pod.status,
      phase: 'Failed',
      reason: options.reason ?? 'NodeLost',
      message: options.message ?? `Node ${nodeName} which was running pod ${name} is unresponsive`,
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('DisruptionTarget', true, 'DeletionByPodGC', previous),
        condition('Ready', false, 'PodFailed', previous),
        condition('ContainersReady', false, 'PodFailed', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      containerStatuses: pod.spec!.containers.map((c) => {
        const before = previousStatus(pod, c.name);
        return before?.state?.running || before?.state?.terminated ? before : runningStatus(pod, c, true);
      }),
    };
  });
}

/**
 * The kubelet evicted the pod (e.g. memory pressure): phase Failed, reason Evicted, every container killed
 * (exit code 137).
 */
export async function podEvicted(
  namespace: string,
  name: string,
  options: { message?: string } = {},
): Promise<V1Pod> {
  await ensureBound(namespace, name, FAKE_NODE_NAME);
  return setPodStatus(namespace, name, (pod) => {
    const previous = pod.status?.conditions;
    return {
      ...pod.status,
      phase: 'Failed',
      reason: 'Evicted',
      message: options.message ?? 'The node was low on resource: memory.',
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        condition('DisruptionTarget', true, 'TerminationByKubelet', previous),
        condition('Ready', false, 'PodFailed', previous),
        condition('ContainersReady', false, 'PodFailed', previous),
        condition('PodScheduled', true, undefined, previous),
      ],
      initContainerStatuses: (pod.spec?.initContainers ?? []).map((c) => terminatedStatus(pod, c, 0)),
      containerStatuses: pod.spec!.containers.map((c) => {
        const before = previousStatus(pod, c.name);
        return before?.state?.terminated ? before : terminatedStatus(pod, c, 137);
      }),
    };
  });
}

/**
 * Finishes a graceful deletion the way the kubelet does once the containers have stopped: deletes the pod
 * with gracePeriodSeconds 0 and waits until it is gone. A bound, non-terminal pod that was deleted keeps
 * existing with a deletionTimestamp until then. Fails, naming them, if finalizers keep the pod.
 */
export async function finishPodDeletion(
  namespace: string,
  name: string,
  options: { timeoutMs?: number } = {},
): Promise<void> {
  const api = coreApi();
  let uid: string | undefined;
  try {
    uid = (await api.readNamespacedPod({ name, namespace })).metadata?.uid;
    await api.deleteNamespacedPod({
      name,
      namespace,
      gracePeriodSeconds: 0,
      body: { gracePeriodSeconds: 0, preconditions: { uid } },
    });
  } catch (err) {
    if (err instanceof ApiException && (err.code === 404 || err.code === 409)) {
      return; // gone already, or replaced by a new pod of the same name that is not ours to delete
    }
    throw err;
  }
  let finalizers: string[] = [];
  try {
    await waitFor(
      async () => {
        try {
          const pod = await api.readNamespacedPod({ name, namespace });
          finalizers = pod.metadata?.finalizers ?? [];
          return pod.metadata?.uid !== uid;
        } catch (err) {
          if (err instanceof ApiException && err.code === 404) {
            return true;
          }
          throw err;
        }
      },
      {
        description: `pod ${namespace}/${name} to be removed after a zero-grace delete`,
        timeoutMs: options.timeoutMs ?? 10_000,
      },
    );
  } catch (err) {
    if (finalizers.length > 0) {
      throw new Error(
        `Pod ${namespace}/${name} is kept by its finalizers ${finalizers.join(', ')}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    throw err;
  }
}
