// The shared listener Deployment's replicas, played as processes: where a kubelet would run the chart's
// `listener` container (LISTENER_MODE=shared, its configs Secret named in LISTENER_CONFIG_SECRET), this
// runs apps/listener from the source tree with that container's env, as the Deployment's service
// account (the kubeconfig given), one process per replica named as its pod would be.
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { V1Container } from '@kubernetes/client-node';
import { ManagedProcess } from './processes';

const LISTENER_MAIN = resolve(__dirname, '..', '..', 'apps', 'listener', 'src', 'main.ts');

export interface SharedListenerReplicasOptions {
  /** The rendered Deployment's `listener` container: its env is what each replica runs with. */
  container: V1Container;
  /** The Deployment's service account's kubeconfig, standing in for the token the kubelet mounts. */
  kubeconfigPath: string;
  replicas: number;
  /** Pod names are `<prefix>-<i>`: each replica's sessions carry its name as their owner. */
  prefix: string;
  logDir: string;
  pidFile?: string;
  /** Environment over the container's (a test's shorter rescan). */
  env?: Record<string, string>;
  /**
   * How the image runs the container's command (its entrypoint wrapper and the compiled app, the
   * image's environment under the container's); apps/listener from the source tree when absent.
   */
  processFor?: (container: V1Container) => { command: string; args: string[]; env?: Record<string, string> };
}

export interface SharedListenerReplica {
  name: string;
  process: ManagedProcess;
}

export class SharedListenerReplicas {
  readonly replicas: SharedListenerReplica[] = [];

  constructor(private readonly o: SharedListenerReplicasOptions) {}

  /** The container's env as the kubelet gives it to pod `name` (POD_NAME from the downward API). */
  private env(name: string): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env, ...this.o.processFor?.(this.o.container).env };
    for (const e of this.o.container.env ?? []) {
      if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') env[e.name] = name;
      else if (e.valueFrom)
        throw new Error(`env ${e.name}: cannot stand in for ${JSON.stringify(e.valueFrom)}`);
      else env[e.name] = e.value ?? '';
    }
    // Each replica on a port of its own, as each pod has an IP of its own.
    return { ...env, LISTENER_METRICS_ADDR: '127.0.0.1:0', KUBECONFIG: this.o.kubeconfigPath, ...this.o.env };
  }

  private launch(name: string): Promise<ManagedProcess> {
    mkdirSync(this.o.logDir, { recursive: true });
    const started = this.o.processFor?.(this.o.container) ?? {
      command: process.execPath,
      args: ['-r', '@swc-node/register', LISTENER_MAIN],
    };
    return ManagedProcess.start({
      name,
      binary: started.command,
      args: started.args,
      logFile: join(this.o.logDir, `${name}.log`),
      env: this.env(name),
      pidFile: this.o.pidFile,
    });
  }

  async start(): Promise<this> {
    for (let i = 0; i < this.o.replicas; i++) {
      const name = `${this.o.prefix}-${i}`;
      this.replicas.push({ name, process: await this.launch(name) });
    }
    return this;
  }

  /** The replica named `name` (a session's owner), if it runs. */
  running(name: string): SharedListenerReplica | undefined {
    return this.replicas.find((r) => r.name === name && r.process.running);
  }

  /** SIGKILL: no session is deleted; the other replica must wait for the service to expire them. */
  async kill(name: string): Promise<void> {
    const replica = this.running(name);
    if (!replica) throw new Error(`no running shared listener replica ${name}`);
    replica.process.killNow();
    await replica.process.exited;
  }

  /** Starts again every replica whose process is gone, as its Deployment would; the names restarted. */
  async restartExited(): Promise<string[]> {
    const restarted: string[] = [];
    for (const replica of this.replicas) {
      if (replica.process.running) continue;
      replica.process = await this.launch(replica.name);
      restarted.push(replica.name);
    }
    return restarted;
  }

  logs(): string {
    return this.replicas.map((r) => `--- ${r.name}\n${r.process.logTail(30)}`).join('\n');
  }

  pids(): number[] {
    return this.replicas.map((r) => r.process.pid);
  }

  async stop(): Promise<void> {
    // SIGTERM: each replica deletes its sessions on the way out, within the pod's 60 s grace.
    await Promise.all(this.replicas.map((r) => r.process.stop(60_000)));
  }
}
