import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { RunningSimulator } from '../../apps/simulator/src';
import { ListenerPodPlayer } from '../harness/listener-pod-player';
import { freePort } from '../harness/ports';
import { RunnerPlayer } from '../harness/runner-player';
import { LISTENER_MAIN } from './apps';
import { RUNNER_NAMESPACE } from './charts';
import {
  identityOf,
  serviceAccountUid,
  writeServiceAccountKubeconfig,
  type AccountIdentity,
} from './identities';
import type { SandboxOptions } from './options';

/** Every job of a runner pod with this image fails (exit 0): the sandbox's bad runner image. */
export const SANDBOX_BROKEN_IMAGE = 'registry.example/broken-runner:1';

/**
 * The kubelet's stand-ins: the runner player plays every runner pod in the runners' namespace (the
 * runner inside takes its one job and exits), the listener-pod player runs the listener process of
 * every listener pod, as the pod's service account.
 */
export interface Players {
  runners: RunnerPlayer;
  listeners: ListenerPodPlayer;
  /** The kubeconfig file each listener ran with, by account and UID. */
  listenerKubeconfigs: Map<string, string>;
  /**
   * Who each of those is to the apiserver, asked when it is made: a token dies with its account, which
   * the uninstall deletes, so the summary cannot ask afterwards.
   */
  listenerIdentities: AccountIdentity[];
}

export function startPlayers(o: {
  admin: KubeConfig;
  adminKubeconfigPath: string;
  sim: RunningSimulator;
  options: SandboxOptions;
  identityDir: string;
  workDir: string;
  pidFile: string;
  log: (line: string) => void;
}): Players {
  const runners = new RunnerPlayer({
    kubeConfig: o.admin,
    namespace: RUNNER_NAMESPACE,
    service: o.sim,
    jobDurationMs: o.options.duration * 1_000,
    failShare: o.options.failShare,
    exit7Share: o.options.exit7Share,
    // A bad runner image to try a canary roll-out with during --keep (docs/sandbox.md).
    failingImages: [SANDBOX_BROKEN_IMAGE],
    jobWaitTimeoutMs: 120_000,
  }).start();

  // Each listener runs as its pod's service account, with the Role the AutoscalingListener
  // controller bound to it (patch its EphemeralRunnerSet and its runners, nothing more).
  const listenerKubeconfigs = new Map<string, string>();
  const listenerIdentities: AccountIdentity[] = [];
  const listeners = new ListenerPodPlayer({
    kubeConfig: o.admin,
    kubeconfigPath: o.adminKubeconfigPath,
    kubeconfigForPod: async (pod) => {
      const namespace = pod.metadata?.namespace ?? '';
      const account = pod.spec?.serviceAccountName ?? 'default';
      // A token is bound to the account's UID: an account made again under its name needs a new one.
      const uid = await serviceAccountUid(o.admin, namespace, account);
      if (!uid) throw new Error(`its service account ${namespace}/${account} does not exist (yet)`);
      const key = `${namespace}/${account}/${uid}`;
      const known = listenerKubeconfigs.get(key);
      if (known) return known;
      const path = await writeServiceAccountKubeconfig(
        o.admin,
        namespace,
        account,
        join(o.identityDir, `listener-${namespace}-${account}-${uid.slice(0, 8)}.kubeconfig`),
      );
      listenerIdentities.push(await identityOf(path));
      listenerKubeconfigs.set(key, path);
      return path;
    },
    namespace: '', // wherever the AutoscalingListener controller puts them
    listenerMain: LISTENER_MAIN,
    workDir: join(o.workDir, 'listeners'),
    pidFile: o.pidFile,
    freePort,
    log: o.log,
  }).start();
  return { runners, listeners, listenerKubeconfigs, listenerIdentities };
}
