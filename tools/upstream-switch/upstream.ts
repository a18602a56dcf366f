import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, type V1Pod } from '@kubernetes/client-node';
import type { ListenerCommand } from '../../test/harness/listener-pod-player';
import { ManagedProcess } from '../../test/harness/processes';

/*
 * Upstream's two programs, built from its source by the person running the switch (README.md):
 * `manager` (main.go) runs as a process against the test control plane, as its chart's Deployment
 * would run it; `ghalistener` is what its listener pods run, started by the listener-pod player with
 * the config upstream's manager wrote. Nothing of upstream's code is in this repository.
 */

/** The image upstream's manager is told it runs as: the listener pods get it, which tells the player whose they are. */
export const UPSTREAM_IMAGE = 'ghcr.io/actions/gha-runner-scale-set-controller:upstream-switch';

export interface UpstreamBuild {
  /** The checkout the binaries came from (its charts/ are rendered too). */
  dir: string;
  manager: string;
  ghalistener: string;
}

export function findUpstreamBuild(dir: string): UpstreamBuild {
  const manager = join(dir, 'bin', 'manager');
  const ghalistener = join(dir, 'bin', 'ghalistener');
  for (const binary of [manager, ghalistener]) {
    if (!existsSync(binary)) {
      throw new Error(
        `${binary} is missing: build upstream first (cd ${dir} && go build -o bin/manager . && ` +
          'go build -o bin/ghalistener ./cmd/ghalistener); see tools/upstream-switch/README.md',
      );
    }
  }
  return { dir, manager, ghalistener };
}

/**
 * Upstream's manager with its chart's arguments (scale-set mode only, leader election on the chart's
 * Lease name; 0.14's update strategy left at its default, immediate, a flag main no longer has), as
 * the control plane's admin: the controller's RBAC is the chart's business, not what a switch tests.
 * Its API client follows KUBECONFIG, but leader election reads its namespace from the pod's
 * service-account folder, so that folder holds the namespace only.
 */
export function startUpstreamManager(o: {
  build: UpstreamBuild;
  kubeconfigPath: string;
  namespace: string;
  dir: string;
  logFile: string;
  pidFile?: string;
}): Promise<ManagedProcess> {
  const command = inPodFiles(o.dir, { namespace: o.namespace }, o.build.manager, [
    '--auto-scaling-runner-set-only',
    '--enable-leader-election',
    '--leader-election-id=arc-gha-rs-controller',
    '--log-level=debug',
    '--log-format=text',
    '--metrics-addr=0',
    '--health-probe-bind-address=',
  ]);
  return ManagedProcess.start({
    name: 'upstream manager',
    ...command,
    env: {
      ...command.env,
      KUBECONFIG: o.kubeconfigPath,
      CONTROLLER_MANAGER_POD_NAMESPACE: o.namespace,
      CONTROLLER_MANAGER_POD_NAME: 'arc-gha-rs-controller-upstream',
      CONTROLLER_MANAGER_CONTAINER_IMAGE: UPSTREAM_IMAGE,
    },
    logFile: o.logFile,
    pidFile: o.pidFile,
  });
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * `program args` with `files` where a pod's service-account volume would put them. Each process gets
 * a mount namespace of its own (unshare, root only) with a tmpfs on /run holding its files, so the
 * host's /run is never touched and two processes never see each other's account. The files are
 * written to `dir/serviceaccount` first and copied in.
 */
function inPodFiles(
  dir: string,
  files: Record<string, string | Buffer>,
  program: string,
  args: string[],
): ListenerCommand {
  const saDir = join(dir, 'serviceaccount');
  mkdirSync(saDir, { recursive: true, mode: 0o700 });
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(saDir, name), content, { mode: 0o600 });
  }
  const script = [
    'set -e',
    'mount -t tmpfs tmpfs /run',
    `mkdir -p ${SERVICE_ACCOUNT_DIR}`,
    `cp "$ARO_SA_DIR"/* ${SERVICE_ACCOUNT_DIR}/`,
    'exec "$@"',
  ].join('\n');
  return {
    binary: 'unshare',
    args: ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', script, 'in-pod', program, ...args],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ARO_SA_DIR: saDir },
  };
}

/** Whether a listener pod is one upstream's manager made (its image is the manager's). */
export function isUpstreamListenerPod(pod: V1Pod): boolean {
  return (pod.spec?.containers ?? []).some((c) => c.image === UPSTREAM_IMAGE);
}

/**
 * How the player runs upstream's listener for one pod. `ghalistener` reaches the apiserver only
 * through the in-cluster configuration: KUBERNETES_SERVICE_HOST/PORT and the service account's token
 * and CA in the pod's service-account folder, here the token the player asked for that account.
 */
export function upstreamListenerCommand(
  build: UpstreamBuild,
  run: { configPath: string; kubeconfigPath: string; dir: string },
): ListenerCommand {
  const kc = new KubeConfig();
  kc.loadFromFile(run.kubeconfigPath);
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster || !user?.token) throw new Error(`${run.kubeconfigPath} has no cluster or no token`);
  const server = new URL(cluster.server);
  const ca = cluster.caData
    ? Buffer.from(cluster.caData, 'base64')
    : readFileSync(cluster.caFile ?? '/nonexistent');
  const command = inPodFiles(
    run.dir,
    { token: user.token, 'ca.crt': ca, namespace: user.name.split(':')[2] ?? 'default' },
    build.ghalistener,
    [],
  );
  return {
    ...command,
    env: {
      ...command.env,
      LISTENER_CONFIG_PATH: run.configPath,
      KUBERNETES_SERVICE_HOST: server.hostname,
      KUBERNETES_SERVICE_PORT: server.port || '443',
    },
  };
}
