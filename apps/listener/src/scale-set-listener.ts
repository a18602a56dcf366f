import { hostname } from 'node:os';
import { Registry } from 'prom-client';
import { ActionsServiceClient, parseGitHubConfigUrl, userAgentFor } from '@aro/actions/lean';
import { Clock, KubeClient, type KubeConfigSource, systemClock } from '@aro/kube/lean';
import type { Logger } from '@aro/observability/lean';
import type { LoadedListenerConfig } from './config';
import { GhaMetrics } from './gha-metrics';
import { WarmHeadroom } from './headroom';
import { JobBookkeeping } from './job-bookkeeping';
import { ListenerMetrics } from './listener-metrics';
import { PollLoop, QueueApi } from './poll-loop';
import { CanaryTally } from './canary-tally';
import { PatchClient, Scaler } from './scaler';
import { EphemeralRunnerSetScaling } from './scaling';
import { MessageSession, SessionApi, type SessionState } from './session';
import { ListenerTuning, resolveTuning } from './tuning';

export interface ScaleSetListenerOptions {
  config: LoadedListenerConfig;
  logger: Logger;
  registry: Registry;
  kubeConfig: KubeConfigSource;
  /**
   * Shared mode: this listener is one of several in the process, so ARO's own series carry the
   * EphemeralRunnerSet's `name` and `namespace` (upstream's gha_* gauges always do).
   */
  shared?: boolean;
  tuning?: Partial<ListenerTuning>;
  /** The session's owner on the service; the pod name (the hostname) by default. */
  owner?: string;
  clock?: Clock;
  /** Seams for the unit tests; the real clients are built from the config otherwise. */
  actions?: SessionApi & QueueApi & { close?(): Promise<void> };
  /**
   * The Kubernetes clients, when the caller owns them (shared mode: one pair for every scale set of the
   * process); built from `kubeConfig`, and closed on stop, otherwise.
   */
  kube?: { scaling: PatchClient; bookkeeping: PatchClient };
  /** Called when the loop ends by itself (a bug: it only ends on stop()); main exits the process. */
  onLoopExit?: (err?: unknown) => void;
}

export interface ListenerHealth {
  healthy: boolean;
  reason?: string;
  sinceLastCycleMs: number;
}

/**
 * One scale set's listener: the Actions client, the two Kubernetes clients (scaling and bookkeeping do
 * not share a connection pool, so one cannot queue behind the other), the session, the scaler, the
 * bookkeeping worker and the poll loop, with start/stop and the health the probes report.
 */
export class ScaleSetListener {
  readonly session: MessageSession;
  readonly loop: PollLoop;
  private readonly bookkeeping: JobBookkeeping;
  private readonly metrics: ListenerMetrics;
  private readonly gha: GhaMetrics;
  private readonly tuning: Required<ListenerTuning>;
  private readonly clock: Clock;
  private readonly actions: SessionApi & QueueApi & { close?(): Promise<void> };
  private readonly kubeClients: KubeClient[] = [];
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  private lastProgressMs: number;
  private stopped: Promise<void> | undefined;
  private sessionReported = false;
  private sessionReports: Promise<void> = Promise.resolve();

  constructor(private readonly o: ScaleSetListenerOptions) {
    const { config, logger, registry } = o;
    this.tuning = resolveTuning(o.tuning);
    this.clock = o.clock ?? systemClock;
    this.lastProgressMs = this.clock.now();
    const log = logger.child({ scaleSet: config.scaleSetName, scaleSetId: config.scaleSetId });
    this.metrics = new ListenerMetrics(
      registry,
      o.shared
        ? { name: config.ephemeralRunnerSetName, namespace: config.ephemeralRunnerSetNamespace }
        : undefined,
    );
    const github = parseGitHubConfigUrl(config.configUrl);
    this.gha = new GhaMetrics({
      registry,
      logger: log.child({ component: 'metrics' }),
      config: config.metrics,
      scaleSet: {
        name: config.ephemeralRunnerSetName,
        namespace: config.ephemeralRunnerSetNamespace,
        enterprise: github.enterprise ?? '',
        organization: github.organization ?? '',
        repository: github.repository ?? '',
      },
    });
    this.gha.recordStatic(config.minRunners, config.maxRunners);
    this.actions =
      o.actions ??
      new ActionsServiceClient({
        configUrl: config.configUrl,
        credentials: config.credentials,
        proxy: config.proxy,
        rootCAs: config.rootCAs,
        // The component only: the client puts it after ARO's own User-Agent.
        userAgent: 'listener',
        requestTimeoutMs: this.tuning.requestTimeoutMs,
        longPollTimeoutMs: this.tuning.longPollTimeoutMs,
        retry: { maxRetries: this.tuning.maxRetries },
        logger: log,
        registry,
      });
    const kube = o.kube ?? {
      scaling: this.kubeClient('scaler'),
      bookkeeping: this.kubeClient('bookkeeping'),
    };
    const canary = new CanaryTally(config.ephemeralRunnerSetName);
    const scaler = new Scaler(kube.scaling, {
      namespace: config.ephemeralRunnerSetNamespace,
      name: config.ephemeralRunnerSetName,
      minRunners: config.minRunners,
      maxRunners: config.maxRunners,
      logger: log.child({ component: 'scaler' }),
      onDesired: (n) => this.gha.recordDesiredRunners(n),
      canaryResults: () => canary.annotation(),
    });
    this.bookkeeping = new JobBookkeeping(kube.bookkeeping, {
      namespace: config.ephemeralRunnerSetNamespace,
      logger: log.child({ component: 'bookkeeping' }),
      qps: this.tuning.bookkeepingQps,
      burst: this.tuning.bookkeepingBurst,
      clock: this.clock,
      onQueueDepth: (d) => this.metrics.runnerStatusQueue(d),
      onPatched: (result) => this.metrics.runnerStatusPatch(result),
    });
    this.session = new MessageSession(this.actions, {
      scaleSetId: config.scaleSetId,
      scaleSetName: config.scaleSetName,
      owner: o.owner ?? hostname(),
      clock: this.clock,
      logger: log.child({ component: 'session' }),
      backoff: this.tuning.backoff,
      refreshMarginMs: this.tuning.queueTokenRefreshMarginMs,
      onStateChange: (state) => {
        this.metrics.sessionState(state === 'open');
        if (o.shared) this.reportSession(scaler, state, log);
      },
      onCreateAttempt: (result) => {
        this.metrics.sessionCreate(result);
        this.lastProgressMs = this.clock.now();
      },
      onScaleSetMissing: () => {
        scaler.reportScaleSetMissing(config.scaleSetId).catch((err: unknown) =>
          log.warn('Could not tell the controller that the scale set is missing', {
            err: err instanceof Error ? err.message : String(err),
          }),
        );
      },
    });
    this.loop = new PollLoop({
      scaleSetId: config.scaleSetId,
      scaleSetName: config.scaleSetName,
      maxRunners: config.maxRunners,
      api: this.actions,
      session: this.session,
      scaling: new EphemeralRunnerSetScaling({
        scaler,
        bookkeeping: this.bookkeeping,
        gha: this.gha,
        metrics: this.metrics,
        clock: this.clock,
        headroom: config.warmHeadroom && new WarmHeadroom(config.warmHeadroom),
        canary,
      }),
      metrics: this.metrics,
      clock: this.clock,
      logger: log.child({ component: 'loop' }),
      backoff: this.tuning.backoff,
      onCycle: () => (this.lastProgressMs = this.clock.now()),
    });
  }

  /**
   * Shared mode: the session's state on the EphemeralRunnerSet, for the AutoscalingListener's status.
   * Only a session this process opened is told closed, so a standby (refused with 409) never overwrites
   * the holder's `open`. Best effort: a failed patch is logged, and told again at the next change.
   */
  private reportSession(scaler: Scaler, state: SessionState, log: Logger): void {
    if (state === 'open') this.sessionReported = true;
    else if (state !== 'closed' || !this.sessionReported) return;
    else this.sessionReported = false;
    const owner = this.o.owner ?? hostname();
    this.sessionReports = this.sessionReports
      .then(() => scaler.reportSession(state, owner))
      .catch((err: unknown) =>
        log.warn('Could not tell the controller the session state', {
          state,
          err: err instanceof Error ? err.message : String(err),
        }),
      );
  }

  /** The config this listener runs with. */
  get config(): LoadedListenerConfig {
    return this.o.config;
  }

  start(): void {
    if (this.running) return;
    this.lastProgressMs = this.clock.now();
    this.bookkeeping.start();
    this.running = this.loop.run(this.abort.signal).then(
      () => {
        if (!this.abort.signal.aborted) this.o.onLoopExit?.();
      },
      (err: unknown) => {
        this.o.logger.error('The poll loop ended with an error', err);
        this.o.onLoopExit?.(err);
      },
    );
  }

  /** Ready once a session is open: the listener is then receiving the scale set's jobs. */
  isReady(): boolean {
    return this.session.state === 'open';
  }

  health(): ListenerHealth {
    const since = this.clock.now() - this.lastProgressMs;
    if (this.running && since > this.tuning.healthStallMs) {
      return {
        healthy: false,
        sinceLastCycleMs: since,
        reason: `the poll loop has not completed a cycle for ${Math.round(since / 1000)} s (bound ${Math.round(this.tuning.healthStallMs / 1000)} s)`,
      };
    }
    return { healthy: true, sinceLastCycleMs: since };
  }

  /**
   * Ends the loop (a long poll in flight is aborted), sends what status patches it can, then deletes the
   * session so a successor can open one at once; all within `shutdownTimeoutMs`.
   */
  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    const deadline = AbortSignal.timeout(this.tuning.shutdownTimeoutMs);
    this.abort.abort(new Error('the listener is shutting down'));
    await this.running;
    await this.bookkeeping.stop(this.tuning.shutdownTimeoutMs / 2);
    await this.session.close(deadline);
    await this.sessionReports;
    await this.actions.close?.();
    for (const c of this.kubeClients) c.close();
    if (this.o.shared) {
      this.gha.forget();
      await this.metrics.forget();
    }
  }

  private kubeClient(component: string): KubeClient {
    const c = new KubeClient(this.o.kubeConfig, {
      userAgent: userAgentFor(`listener-${component}`),
      fieldManager: 'aro-listener',
      requestTimeoutMs: this.tuning.requestTimeoutMs,
      logger: this.o.logger,
    });
    this.kubeClients.push(c);
    return c;
  }
}
