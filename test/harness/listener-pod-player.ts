// A kubelet player for listener pods: where a kubelet would pull the listener image and run it, this
// runs the listener process from the source tree (apps/listener) with the pod's configuration, and
// reports the process's life in the pod's status. The AutoscalingListener controller then sees the
// pod it created run, fail and be replaced as it would in a cluster.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import { ListenerDefaults, type ListenerConfig } from '@aro/api';
import { KubeClient, PodKind, SecretKind } from '@aro/kube';
import { FAKE_NODE_NAME, finishPodDeletion, setPodStatus } from './pod-lifecycle';
import { ManagedProcess } from './processes';

/** The listener pod's container, as the AutoscalingListener controller names it. */
export const LISTENER_CONTAINER = 'listener';

export interface ListenerPodPlayerOptions {
  kubeConfig: KubeConfig;
  /** The kubeconfig file the listener processes use (LISTENER_CONFIG_PATH's sibling KUBECONFIG). */
  kubeconfigPath: string;
  /**
   * The kubeconfig file for one pod's listener, standing in for the service account token the kubelet
   * would mount (so the listener runs with the Role its controller gave that account); default
   * `kubeconfigPath` for every pod.
   */
  kubeconfigForPod?: (pod: V1Pod) => Promise<string>;
  /** Namespace of the listener pods; empty for every namespace (where the controller puts them is its choice). */
  namespace: string;
  /** apps/listener/src/main.ts (run with @swc-node/register) or a built entrypoint. */
  listenerMain: string;
  /** Config files and logs go here, one folder per pod; removed by stop(). */
  workDir: string;
  /** The control plane's pid file, so that its reaper kills the listeners if the caller dies. */
  pidFile?: string;
  /** Port for each listener's metrics; default: a free one picked by `freePort`. */
  freePort: () => Promise<number>;
  pollIntervalMs?: number;
  log?: (line: string) => void;
  /**
   * The program that plays one pod's listener, when it is not apps/listener (another system's
   * listener image, run from its own build): given the config file and the pod's kubeconfig, the
   * command line and environment; undefined to run `listenerMain` as usual.
   */
  commandFor?: (
    pod: V1Pod,
    run: { configPath: string; kubeconfigPath: string; dir: string },
  ) => Promise<ListenerCommand | undefined>;
}

export interface ListenerCommand {
  binary: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export interface PlayedListener {
  namespace: string;
  pod: string;
  uid: string;
  process: ManagedProcess;
  /** Where this listener serves its metrics (rewritten from the config's metrics_addr). */
  metricsUrl: string;
}

function configSecretName(pod: V1Pod): string | undefined {
  const container = pod.spec?.containers.find((c) => c.name === LISTENER_CONTAINER);
  const mountDir = dirname(ListenerDefaults.configPath);
  const mount = container?.volumeMounts?.find(
    (m) => m.mountPath === mountDir || m.mountPath === ListenerDefaults.configPath,
  );
  const volume = pod.spec?.volumes?.find((v) => v.name === mount?.name);
  return volume?.secret?.secretName;
}

/**
 * Plays every listener pod (a container named `listener`) of one namespace: starts the listener with
 * the pod's config secret written to a file, marks the pod Running, and Succeeded/Failed when the
 * process ends; stops the process when the pod is deleted and finishes the deletion.
 */
export class ListenerPodPlayer {
  private readonly kube: KubeClient;
  private readonly core: CoreV1Api;
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  /** Listeners started so far, by pod uid; the live ones are those whose process runs. */
  readonly played = new Map<string, PlayedListener>();
  readonly errors: string[] = [];
  /** The last error told for each pod (by uid), so that a retried failure is told once. */
  private readonly toldErrors = new Map<string, string>();

  constructor(private readonly options: ListenerPodPlayerOptions) {
    this.kube = new KubeClient(options.kubeConfig, { userAgent: 'aro-listener-pod-player' });
    this.core = options.kubeConfig.makeApiClient(CoreV1Api);
  }

  start(): this {
    mkdirSync(this.options.workDir, { recursive: true });
    this.loop ??= this.run();
    return this;
  }

  /** The listeners whose process is running now. */
  running(): PlayedListener[] {
    return [...this.played.values()].filter((l) => l.process.running);
  }

  /** SIGKILLs one running listener (chaos); the pod then goes Failed and its controller replaces it. */
  async killOne(): Promise<PlayedListener | undefined> {
    const victim = this.running()[0];
    if (!victim) return undefined;
    victim.process.killNow();
    await victim.process.exited;
    return victim;
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await Promise.all([...this.played.values()].map((l) => l.process.stop(15_000)));
    this.kube.close();
    rmSync(this.options.workDir, { recursive: true, force: true });
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  /**
   * One pod's trouble, told live (once per pod and message, so a retried failure does not flood the
   * log) and kept in `errors`; the player goes on with the other pods and tries this one again.
   */
  private podError(uid: string, pod: string, err: unknown): void {
    const message = `listener pod ${pod}: ${err instanceof Error ? err.message : String(err)}`;
    const seen = this.toldErrors.get(uid);
    if (seen === message) return;
    this.toldErrors.set(uid, message);
    this.errors.push(message);
    this.log(`!!! ${message}`);
  }

  private async run(): Promise<void> {
    const interval = this.options.pollIntervalMs ?? 250;
    const reported = new Set<string>();
    while (!this.abort.signal.aborted) {
      let pods: V1Pod[] = [];
      try {
        pods = await this.kube.list<V1Pod>(PodKind, { namespace: this.options.namespace });
      } catch (err) {
        this.errors.push(`listing listener pods: ${(err as Error).message}`);
      }
      const present = new Set<string>();
      for (const pod of pods) {
        if (!pod.spec?.containers.some((c) => c.name === LISTENER_CONTAINER)) continue;
        const uid = pod.metadata?.uid ?? '';
        present.add(uid);
        // Each pod on its own: one that cannot be started (its account missing, a bad config) must
        // not keep the others from starting, finishing or being deleted.
        try {
          await this.playPod(pod, reported);
        } catch (err) {
          this.podError(uid, `${pod.metadata?.namespace}/${pod.metadata?.name}`, err);
        }
      }
      // A pod removed without our help (force delete, namespace deletion): its process goes too.
      for (const [uid, played] of this.played) {
        if (!present.has(uid) && played.process.running) {
          await played.process.stop(10_000).catch((err: unknown) => this.podError(uid, played.pod, err));
        }
      }
      await new Promise((r) => setTimeout(r, interval));
    }
  }

  private async playPod(pod: V1Pod, reported: Set<string>): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const played = this.played.get(uid);
    if (
      !played &&
      !pod.metadata?.deletionTimestamp &&
      !['Succeeded', 'Failed'].includes(pod.status?.phase ?? '')
    ) {
      await this.launch(pod);
    } else if (played && pod.metadata?.deletionTimestamp) {
      await played.process.stop(ListenerDefaults.terminationGracePeriodSeconds * 1_000);
      await finishPodDeletion(played.namespace, played.pod).catch(() => undefined);
      this.log(`listener ${played.pod}: pod deleted; process stopped`);
    } else if (played && !played.process.running && !reported.has(uid)) {
      reported.add(uid);
      const exit = played.process.exitStatusOrUndefined;
      await this.terminated(played.namespace, played.pod, exit?.code ?? 137);
      this.log(`listener ${played.pod}: process exited (code ${exit?.code}, signal ${exit?.signal})`);
    }
  }

  private async launch(pod: V1Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const namespace = pod.metadata?.namespace ?? '';
    const secretName = configSecretName(pod);
    if (!secretName) {
      this.errors.push(
        `listener pod ${namespace}/${name} mounts no secret at ${ListenerDefaults.configPath}`,
      );
      this.played.set(uid, {
        namespace,
        pod: name,
        uid,
        process: await this.placeholder(name),
        metricsUrl: '',
      });
      return;
    }
    let secret: V1Secret;
    try {
      secret = await this.kube.get<V1Secret>(SecretKind, namespace, secretName);
    } catch {
      return; // the controller writes the secret before the pod; try again on the next pass
    }
    const raw = secret.data?.[ListenerDefaults.configSecretKey];
    if (!raw) return;
    const config = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as ListenerConfig;
    const kubeconfigPath = this.options.kubeconfigForPod
      ? await this.options.kubeconfigForPod(pod)
      : this.options.kubeconfigPath;
    const port = await this.options.freePort();
    // Every listener serves metrics on its own loopback port instead of the pod's :8080.
    config.metrics_addr = `127.0.0.1:${port}`;
    const dir = join(this.options.workDir, `${name}-${uid.slice(0, 8)}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, 'config.json');
    writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
    const command = (await this.options.commandFor?.(pod, { configPath, kubeconfigPath, dir })) ?? {
      binary: process.execPath,
      args: ['-r', '@swc-node/register', this.options.listenerMain],
      env: { ...process.env, LISTENER_CONFIG_PATH: configPath, KUBECONFIG: kubeconfigPath },
    };
    const process_ = await ManagedProcess.start({
      name: `listener ${name}`,
      ...command,
      logFile: join(dir, 'listener.log'),
      pidFile: this.options.pidFile,
    });
    const metricsPath = config.metrics_endpoint || ListenerDefaults.metricsEndpoint;
    this.played.set(uid, {
      namespace,
      pod: name,
      uid,
      process: process_,
      metricsUrl: `http://127.0.0.1:${port}${metricsPath}`,
    });
    await this.markRunning(namespace, name);
    this.log(`listener ${name}: started (pid ${process_.pid}, log ${join(dir, 'listener.log')})`);
  }

  /** A stand-in process for a pod that cannot run (bad spec): it exits at once, so the pod goes Failed. */
  private placeholder(name: string): Promise<ManagedProcess> {
    return ManagedProcess.start({
      name: `listener ${name}`,
      binary: '/bin/false',
      args: [],
      logFile: '/dev/null',
    });
  }

  private async bind(namespace: string, name: string): Promise<void> {
    const pod = await this.core.readNamespacedPod({ name, namespace });
    if (pod.spec?.nodeName) return;
    await this.core.createNamespacedPodBinding({
      name,
      namespace,
      body: {
        metadata: { name, namespace },
        target: { apiVersion: 'v1', kind: 'Node', name: FAKE_NODE_NAME },
      },
    });
  }

  private async markRunning(namespace: string, name: string): Promise<void> {
    await this.bind(namespace, name);
    await setPodStatus(namespace, name, (pod) => ({
      phase: 'Running',
      startTime: pod.status?.startTime ?? new Date(),
      conditions: [
        { type: 'Ready', status: 'True', lastTransitionTime: new Date() },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date() },
      ],
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: new Date() } },
      })),
    }));
  }

  private async terminated(namespace: string, name: string, exitCode: number): Promise<void> {
    await setPodStatus(namespace, name, (pod) => ({
      ...pod.status,
      phase: exitCode === 0 ? 'Succeeded' : 'Failed',
      conditions: [
        { type: 'Ready', status: 'False', reason: 'PodCompleted', lastTransitionTime: new Date() },
        { type: 'PodScheduled', status: 'True', lastTransitionTime: new Date() },
      ],
      containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? '',
        imageID: '',
        ready: false,
        started: false,
        restartCount: 0,
        state: {
          terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', finishedAt: new Date() },
        },
      })),
    }));
  }
}
