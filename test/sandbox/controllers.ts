import { get } from 'node:http';
import { join } from 'node:path';
import type { V1Container, V1Lease } from '@kubernetes/client-node';
import { KubeClient, LeaseKind } from '@aro/kube';
import { freePort } from '../harness/ports';
import { ManagedProcess } from '../harness/processes';
import { CONTROLLER_MAIN } from './apps';
import { containerEnv } from './charts';

function httpOk(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get(url, { timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

export interface ControllerReplica {
  name: string;
  port: number;
  process: ManagedProcess;
  /** Times this replica was started (a Deployment restarts a killed pod; so does the sandbox). */
  starts: number;
  /** When its current process exited (0 while it runs). */
  exitedAt: number;
}

/**
 * How long a replica stays down before it is started again: the kubelet restarts a container that
 * exited at once and backs off only if it keeps crashing; a few seconds is what a SIGKILLed pod of a
 * Deployment takes to be back on a busy node, and long enough for the standby to notice the lease lapse.
 */
export const RESTART_DELAY_MS = 3_000;

/**
 * The controller as the chart deploys it: the rendered Deployment's replicas, each a process of
 * apps/controller with the manager container's env (leader election on the Lease the chart names,
 * POD_NAME and POD_NAMESPACE from the downward API) and the chart service account's kubeconfig.
 *
 * Two translations from pod to process, both here: the image's `aro-controller` wrapper runs the
 * compiled app from dist/, which `npm run build` takes minutes to make, so the sandbox runs the same
 * main from source; and each replica serves its metrics port (PROBE_PORT) on a free loopback port, as
 * each pod would have an IP of its own. Each runs as its own process group (ManagedProcess), listed in
 * the control plane's pid file so that its reaper kills them too if the sandbox is killed outright.
 */
export class ControllerReplicas {
  readonly replicas: ControllerReplica[] = [];
  private stopping = false;

  constructor(
    private readonly options: {
      /** The rendered Deployment's manager container. */
      container: V1Container;
      namespace: string;
      serviceAccountName: string;
      /** The service account's kubeconfig, standing in for the token the kubelet would mount. */
      kubeconfigPath: string;
      logDir: string;
      pidFile: string;
      /** An admin client, to read the Lease for the progress view. */
      kube: KubeClient;
      replicas: number;
      /** The program each replica runs; default apps/controller's main (a test gives a stand-in). */
      main?: string;
    },
  ) {}

  /** The Lease the replicas elect their leader on, as the chart names it. */
  get lease(): { namespace: string; name: string } {
    const env = containerEnv(this.options.container, {
      name: '',
      namespace: this.options.namespace,
      serviceAccountName: this.options.serviceAccountName,
    });
    return { namespace: env.LEADER_ELECTION_NAMESPACE ?? '', name: env.LEADER_ELECTION_ID ?? '' };
  }

  private env(name: string, port: number, webhookPort: number): NodeJS.ProcessEnv {
    const env = containerEnv(this.options.container, {
      name,
      namespace: this.options.namespace,
      serviceAccountName: this.options.serviceAccountName,
    });
    return {
      ...process.env,
      ...env,
      PROBE_PORT: String(port),
      PROBE_BIND_ADDRESS: '127.0.0.1',
      // The eviction webhook's port, like the metrics one: a free loopback port per replica, as each
      // pod would have an IP of its own.
      ...(env.EVICTION_WEBHOOK_PORT
        ? { EVICTION_WEBHOOK_PORT: String(webhookPort), EVICTION_WEBHOOK_BIND_ADDRESS: '127.0.0.1' }
        : {}),
      KUBECONFIG: this.options.kubeconfigPath,
    };
  }

  private async launch(name: string, port: number): Promise<ManagedProcess> {
    return ManagedProcess.start({
      name,
      binary: process.execPath,
      args: ['-r', '@swc-node/register', this.options.main ?? CONTROLLER_MAIN],
      logFile: join(this.options.logDir, `${name}.log`),
      env: this.env(name, port, await freePort()),
      pidFile: this.options.pidFile,
    });
  }

  /** Starts every replica and waits until each answers /healthz. */
  async start(timeoutMs = 120_000): Promise<void> {
    for (let i = 0; i < this.options.replicas; i++) {
      const name = `aro-controller-${i}`;
      const port = await freePort();
      const replica = { name, port, process: await this.launch(name, port), starts: 1, exitedAt: 0 };
      this.watchExit(replica);
      this.replicas.push(replica);
    }
    await Promise.all(this.replicas.map((r) => this.waitHealthy(r, timeoutMs)));
  }

  private async waitHealthy(replica: ControllerReplica, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!replica.process.running) {
        throw new Error(
          `${replica.name} exited before answering /healthz; last lines of ${replica.process.logFile}:\n` +
            replica.process.logTail(20),
        );
      }
      if (await httpOk(`http://127.0.0.1:${replica.port}/healthz`)) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(
      `${replica.name} did not answer /healthz within ${timeoutMs} ms (${replica.process.logFile})`,
    );
  }

  metricsUrl(replica: ControllerReplica): string {
    return `http://127.0.0.1:${replica.port}/metrics`;
  }

  /** The Lease's holder, or undefined while nobody holds it. */
  async leader(): Promise<string | undefined> {
    try {
      const { namespace, name } = this.lease;
      const lease = await this.options.kube.get<V1Lease>(LeaseKind, namespace, name);
      return lease.spec?.holderIdentity || undefined;
    } catch {
      return undefined;
    }
  }

  private watchExit(replica: ControllerReplica): void {
    const current = replica.process;
    void current.exited.then(() => {
      if (replica.process === current) replica.exitedAt = Date.now();
    });
  }

  /**
   * Restarts every replica whose process has been gone for `afterMs`, however it went (a chaos kill,
   * a person's `kill -9` during --keep, a crash), as its Deployment would; returns the restarted ones.
   */
  async restartExited(afterMs = RESTART_DELAY_MS): Promise<ControllerReplica[]> {
    const restarted: ControllerReplica[] = [];
    for (const replica of this.replicas) {
      if (this.stopping || replica.process.running || !replica.exitedAt) continue;
      if (Date.now() - replica.exitedAt < afterMs) continue;
      replica.process = await this.launch(replica.name, replica.port);
      replica.exitedAt = 0;
      replica.starts += 1;
      this.watchExit(replica);
      restarted.push(replica);
    }
    return restarted;
  }

  /** SIGKILLs the replica that holds the Lease (no graceful release: the others must wait it out). */
  async killLeader(): Promise<string | undefined> {
    const holder = await this.leader();
    const replica = this.replicas.find((r) => holder?.startsWith(`${r.name}_`));
    return replica ? this.kill(replica) : undefined;
  }

  /** SIGKILLs a running replica that does not hold the Lease (the standby), if there is one. */
  async killStandby(): Promise<string | undefined> {
    const holder = await this.leader();
    const replica = this.replicas.find((r) => r.process.running && !holder?.startsWith(`${r.name}_`));
    return replica ? this.kill(replica) : undefined;
  }

  private async kill(replica: ControllerReplica): Promise<string> {
    replica.process.killNow();
    await replica.process.exited;
    return replica.name;
  }

  pids(): number[] {
    return this.replicas.map((r) => r.process.pid);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.replicas.map((r) => r.process.stop(15_000)));
  }
}
