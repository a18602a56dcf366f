import type { Registry } from 'prom-client';
import { userAgentFor } from '@aro/actions';
import { Clock, KubeClient, type KubeConfigSource, sleep, systemClock } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { LoadedListenerConfig } from '../config';
import type { ProbeResult, ProbeSource } from '../probe-server';
import { ScaleSetListener } from '../scale-set-listener';
import type { ListenerTuning } from '../tuning';

export interface SharedListenerHostOptions {
  registry: Registry;
  logger: Logger;
  kubeConfig: KubeConfigSource;
  tuning?: Partial<ListenerTuning>;
  /** The sessions' owner on the service (the pod name). */
  owner: string;
  clock?: Clock;
  /** Wait before a scale set whose loop ended by itself is started again. Default 5 s. */
  restartDelayMs?: number;
}

interface Served {
  listener: ScaleSetListener;
  /** The config it runs with, as read: a different one restarts it. */
  fingerprint: string;
}

/**
 * Shared mode: one process holds the message sessions of many scale sets. Each scale set keeps what it
 * has in a pod of its own: its own ScaleSetListener, so its own Actions client (its credentials, proxy
 * and CA), session, poll loop, scaler, bookkeeping and backoff; nothing one set does waits on another
 * (a set whose credentials are refused backs off in its own loop while the others poll on). What is
 * shared is what costs memory without isolating anything: the Node process itself (~85 MiB, see
 * docs/performance.md), the metrics registry (series carry the EphemeralRunnerSet's `name` and
 * `namespace`) and one pair of Kubernetes clients (scaling and bookkeeping still apart).
 *
 * `apply` is given the whole set of configs each time (from a directory or the API): a new key starts a
 * listener, a changed config restarts it, a missing key stops it (its session is deleted).
 */
export class SharedListenerHost implements ProbeSource {
  private readonly served = new Map<string, Served>();
  private readonly scaling: KubeClient;
  private readonly bookkeeping: KubeClient;
  private readonly clock: Clock;
  private readonly stopping = new AbortController();
  private applying: Promise<void> = Promise.resolve();

  constructor(private readonly o: SharedListenerHostOptions) {
    this.clock = o.clock ?? systemClock;
    const kube = (component: string) =>
      new KubeClient(o.kubeConfig, {
        userAgent: userAgentFor(`listener-${component}`),
        fieldManager: 'aro-listener',
        requestTimeoutMs: o.tuning?.requestTimeoutMs ?? 30_000,
        logger: o.logger,
      });
    this.scaling = kube('scaler');
    this.bookkeeping = kube('bookkeeping');
  }

  /** The scale sets served, by key. */
  keys(): string[] {
    return [...this.served.keys()];
  }

  listener(key: string): ScaleSetListener | undefined {
    return this.served.get(key)?.listener;
  }

  /** Serves exactly `configs` (key -> config); calls are applied one after the other. */
  apply(configs: ReadonlyMap<string, LoadedListenerConfig>): Promise<void> {
    this.applying = this.applying.then(() => this.reconcile(configs));
    return this.applying;
  }

  private async reconcile(configs: ReadonlyMap<string, LoadedListenerConfig>): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const stops: Array<Promise<void>> = [];
    for (const [key, served] of this.served) {
      const next = configs.get(key);
      if (next && fingerprintOf(next) === served.fingerprint) continue;
      this.served.delete(key);
      this.o.logger.info(
        next ? 'Restarting a scale set with its changed config' : 'No longer serving a scale set',
        {
          key,
        },
      );
      stops.push(this.stopQuietly(key, served.listener));
    }
    // Stopped in parallel: each deletes its own session within its own shutdown budget.
    await Promise.all(stops);
    for (const [key, config] of configs) {
      if (!this.served.has(key)) this.start(key, config);
    }
  }

  private start(key: string, config: LoadedListenerConfig): void {
    const listener = new ScaleSetListener({
      config,
      logger: this.o.logger,
      registry: this.o.registry,
      kubeConfig: this.o.kubeConfig,
      shared: true,
      kube: { scaling: this.scaling, bookkeeping: this.bookkeeping },
      tuning: this.o.tuning,
      owner: this.o.owner,
      clock: this.clock,
      onLoopExit: (err) => void this.restartAfterExit(key, listener, err),
    });
    this.served.set(key, { listener, fingerprint: fingerprintOf(config) });
    this.o.logger.info('Serving a scale set', {
      key,
      scaleSet: config.scaleSetName,
      scaleSetId: config.scaleSetId,
      ephemeralRunnerSet: `${config.ephemeralRunnerSetNamespace}/${config.ephemeralRunnerSetName}`,
    });
    listener.start();
  }

  /** A loop that ended by itself (a bug: loops end only on stop) costs that scale set a restart, nothing more. */
  private async restartAfterExit(key: string, listener: ScaleSetListener, err: unknown): Promise<void> {
    const served = this.served.get(key);
    if (served?.listener !== listener) return;
    this.o.logger.error('A scale set’s poll loop stopped by itself; starting it again', err, { key });
    this.served.delete(key);
    await this.stopQuietly(key, listener);
    await sleep(this.clock, this.o.restartDelayMs ?? 5_000, this.stopping.signal).catch(() => undefined);
    if (!this.stopping.signal.aborted && !this.served.has(key)) this.start(key, listener.config);
  }

  private async stopQuietly(key: string, listener: ScaleSetListener): Promise<void> {
    try {
      await listener.stop();
    } catch (err) {
      this.o.logger.warn('Stopping a scale set’s listener failed', { key, error: String(err) });
    }
  }

  /** Stops every listener (each deletes its session), then the shared clients. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.applying;
    const all = [...this.served].map(([key, s]) => this.stopQuietly(key, s.listener));
    this.served.clear();
    await Promise.all(all);
    this.scaling.close();
    this.bookkeeping.close();
  }

  /** Unhealthy only when some loop is stuck on a call that never returns, which a restart cures. */
  liveness(): ProbeResult {
    const stuck: Record<string, string> = {};
    for (const [key, s] of this.served) {
      const h = s.listener.health();
      if (!h.healthy) stuck[key] = h.reason ?? 'stuck';
    }
    const n = Object.keys(stuck).length;
    return n === 0
      ? { up: true, details: { scaleSets: this.served.size } }
      : { up: false, details: { reason: `${n} poll loop(s) stuck`, stuck } };
  }

  /**
   * Ready while serving: one scale set without a session (a conflict, refused credentials) must not take
   * the others' process out of service. Each set's own state is on its series (aro_listener_session_open).
   */
  readiness(): ProbeResult {
    let open = 0;
    for (const s of this.served.values()) if (s.listener.isReady()) open++;
    return { up: true, details: { scaleSets: this.served.size, sessionsOpen: open } };
  }
}

function fingerprintOf(config: LoadedListenerConfig): string {
  return JSON.stringify(config.raw);
}
