import { ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import { AUTOSCALING_LISTENER_CONTAINER_NAME, ListenerDefaults } from '@aro/api';
import { KubeClient, PodKind, SecretKind, isNotFound } from '@aro/kube';
import { controlPlaneInfo, testKubeConfig } from './context';
import { setPodStatus } from './pod-lifecycle';

const repoRoot = resolve(__dirname, '..', '..');

export interface ListenerPlayerOptions {
  /** Where the AutoscalingListener controller puts listener pods (the controller's namespace). */
  namespace: string;
  /** How often pods are looked at. Default 300 ms. */
  intervalMs?: number;
  /** Extra environment for every listener process. */
  env?: Record<string, string>;
  /**
   * The kubeconfig file a pod's listener process uses; default the test control plane's admin one.
   * A test proving the listener's RBAC gives one holding the identity of the pod's ServiceAccount.
   */
  kubeconfigFor?: (pod: V1Pod) => string | Promise<string>;
  /**
   * How a pod's listener process is started; default apps/listener/src/main.ts from source. A test of
   * the image runs the pod's command through the image's entrypoints instead; its `env` goes over
   * the pod's and the `env` option above.
   */
  processFor?: (pod: V1Pod) => { command: string; args: string[]; env?: Record<string, string> };
}

export interface PlayedListener {
  pod: string;
  uid: string;
  pid: number;
  /** undefined while running. */
  exitCode?: number | null;
  signal?: NodeJS.Signals | null;
  /** The process's output, for a failing test's message. */
  logPath: string;
}

interface Tracked extends PlayedListener {
  child: ChildProcess;
  dir: string;
  exited: Promise<void>;
  stopRequested: boolean;
}

/**
 * The kubelet for listener pods: there is none in the test control plane, so this watches the namespace
 * for pods with a `listener` container and runs each as the real listener process (apps/listener),
 * with LISTENER_CONFIG_PATH pointing at a temporary copy of the pod's config secret and KUBECONFIG at
 * the test control plane (the pod's ServiceAccount token does not exist here). The pod is marked
 * Running while the process lives, and Failed/Succeeded with its exit code when it ends by itself;
 * when the pod is deleted the process gets SIGTERM (the pod's grace period) and the player waits for it.
 * The metrics address is rewritten to a free loopback port so listeners do not collide.
 */
export class ListenerPlayer {
  private readonly tracked = new Map<string, Tracked>();
  private readonly kube = new KubeClient(testKubeConfig());
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  readonly history: PlayedListener[] = [];

  private constructor(private readonly o: ListenerPlayerOptions) {}

  static start(o: ListenerPlayerOptions): ListenerPlayer {
    const player = new ListenerPlayer(o);
    player.schedule();
    return player;
  }

  /** Processes currently running. */
  running(): PlayedListener[] {
    return [...this.tracked.values()].filter((t) => t.exitCode === undefined && t.signal === undefined);
  }

  /** Kills a listener process without a shutdown (SIGKILL), as an OOM kill or a node loss would. */
  kill(podName: string): void {
    for (const t of this.tracked.values()) if (t.pod === podName) t.child.kill('SIGKILL');
  }

  /** SIGTERMs every listener, waits for them, and stops watching. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    await Promise.all([...this.tracked.values()].map((t) => this.terminate(t)));
    this.kube.close();
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick()
        .catch((err: unknown) => {
          process.stderr.write(`[listener-player] ${String(err)}\n`);
        })
        .finally(() => this.schedule());
    }, this.o.intervalMs ?? 300);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const pods = await this.kube.list<V1Pod>(PodKind, { namespace: this.o.namespace });
    const live = new Map<string, V1Pod>();
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? '';
      if (!pod.spec?.containers.some((c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME)) continue;
      if (pod.metadata?.deletionTimestamp) continue;
      live.set(uid, pod);
      const phase = pod.status?.phase;
      if (!this.tracked.has(uid) && phase !== 'Failed' && phase !== 'Succeeded') await this.launch(pod);
    }
    for (const t of this.tracked.values()) {
      if (!live.has(t.uid) && !t.stopRequested) void this.terminate(t);
    }
  }

  private async launch(pod: V1Pod): Promise<void> {
    const namespace = pod.metadata?.namespace ?? this.o.namespace;
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const container = pod.spec?.containers.find((c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME);
    const secretName = pod.spec?.volumes?.find((v) => v.secret?.secretName)?.secret?.secretName;
    if (!secretName) return; // not a listener pod we can run (no config secret volume)
    let secret: V1Secret;
    try {
      secret = await this.kube.get<V1Secret>(SecretKind, namespace, secretName);
    } catch (err) {
      if (isNotFound(err)) return; // the controller writes it first; look again next tick
      throw err;
    }
    const encoded = secret.data?.[ListenerDefaults.configSecretKey];
    if (!encoded) return;
    const config = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8')) as Record<string, unknown>;
    config.metrics_addr = '127.0.0.1:0';
    const kubeconfigPath = this.o.kubeconfigFor
      ? await this.o.kubeconfigFor(pod)
      : controlPlaneInfo().kubeconfigPath;
    const dir = mkdtempSync(join(tmpdir(), `aro-listener-${name}-`));
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify(config));
    const env: Record<string, string> = {};
    for (const e of container?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    const started = this.o.processFor?.(pod) ?? {
      command: process.execPath,
      args: ['-r', '@swc-node/register', 'apps/listener/src/main.ts'],
    };
    const logPath = join(dir, 'listener.log');
    const log = createWriteStream(logPath);
    const child = spawn(started.command, started.args, {
      cwd: repoRoot,
      env: {
        ...process.env,
        ...env,
        ...this.o.env,
        ...started.env,
        LISTENER_CONFIG_PATH: configPath,
        KUBECONFIG: kubeconfigPath,
        POD_NAME: name,
        POD_NAMESPACE: namespace,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const tracked: Tracked = {
      pod: name,
      uid,
      pid: child.pid ?? 0,
      logPath,
      child,
      dir,
      stopRequested: false,
      exited: new Promise<void>((done) =>
        child.once('exit', (code, signal) => {
          tracked.exitCode = code;
          tracked.signal = signal;
          done();
        }),
      ),
    };
    this.tracked.set(uid, tracked);
    this.history.push(tracked);
    await setPodStatus(namespace, name, (p) => ({
      ...p.status,
      phase: 'Running',
      startTime: new Date(),
      containerStatuses: [
        {
          name: AUTOSCALING_LISTENER_CONTAINER_NAME,
          image: container?.image ?? '',
          imageID: '',
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: new Date() } },
        },
      ],
    })).catch(() => undefined);
    void tracked.exited.then(() => this.exitedByItself(namespace, tracked));
  }

  /** The process ended while its pod still exists: report it as the kubelet would. */
  private async exitedByItself(namespace: string, t: Tracked): Promise<void> {
    if (t.stopRequested) return;
    const exitCode = t.exitCode ?? 137;
    await setPodStatus(namespace, t.pod, (p) => ({
      ...p.status,
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      containerStatuses: [
        {
          name: AUTOSCALING_LISTENER_CONTAINER_NAME,
          image: p.spec?.containers.find((c) => c.name === AUTOSCALING_LISTENER_CONTAINER_NAME)?.image ?? '',
          imageID: '',
          ready: false,
          restartCount: 0,
          started: false,
          state: {
            terminated: {
              exitCode,
              reason: exitCode === 0 ? 'Completed' : 'Error',
              finishedAt: new Date(),
            },
          },
        },
      ],
    })).catch(() => undefined);
  }

  private async terminate(t: Tracked): Promise<void> {
    if (!t.stopRequested) {
      t.stopRequested = true;
      if (t.exitCode === undefined && t.signal === undefined) t.child.kill('SIGTERM');
    }
    const grace = setTimeout(
      () => t.child.kill('SIGKILL'),
      ListenerDefaults.terminationGracePeriodSeconds * 1000,
    );
    await t.exited;
    clearTimeout(grace);
    rmSync(t.dir, { recursive: true, force: true });
  }

  /** The last lines a listener process wrote, for a test's failure message. */
  static tail(p: PlayedListener, lines = 30): string {
    try {
      return readFileSync(p.logPath, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(log removed)';
    }
  }
}
