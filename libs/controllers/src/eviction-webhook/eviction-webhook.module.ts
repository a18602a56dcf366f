import {
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { SchedulerRegistry, ScheduleModule } from '@nestjs/schedule';
import { KubeClient, exponentialBackoffMs } from '@aro/kube';
import { LOGGER, type Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { EventRecorder } from '../events/event-recorder';
import { describeError } from '../shared/describe-error';
import { actionsClientsFrom } from '../registrations/unregistration-queue';
import type { EventsMode } from '../shared/define-controller';
import { EvictionAdmission } from './eviction-admission';
import type { PemPair } from './certificate-issuer';
import { WebhookCertificate, type WebhookCertificateOptions } from './webhook-certificate';
import { EvictionWebhookServer, type EvictionWebhookServerOptions } from './webhook-server';

export interface EvictionWebhookModuleOptions extends Partial<EvictionWebhookServerOptions> {
  /** Off: no server, and evictions of runner pods are reviewed by no one (the chart renders no webhook). */
  enabled: boolean;
  /** Which Events the webhook records (its Normal one only with `all`). */
  events?: EventsMode;
  /** How long the service's "executing a job" answers a busy runner's eviction retries (default 30 s). */
  busyAnswerStandsMs?: number;
  /**
   * The controller makes the certificate, keeps it in this Secret and the configuration's caBundle, and
   * renews it (the chart's way). Without it, `tls` or the pair in `certDir` is served as it is.
   */
  certificate?: WebhookCertificateOptions & {
    /** How often each replica reads the Secret again, to renew or to pick up another's renewal. */
    refreshIntervalMs?: number;
  };
}

export const EVICTION_WEBHOOK_MODULE_OPTIONS = Symbol('aro.controllers.evictionWebhookOptions');
const DEFAULT_REVIEW_TIMEOUT_MS = 8_000;
/**
 * A renewal starts with a third of the certificate's life left (months), so an hourly read is far
 * inside it; it costs each replica two GETs an hour.
 */
const DEFAULT_CERTIFICATE_REFRESH_MS = 60 * 60 * 1000;
/** How soon a replica looks again for a configuration that did not exist yet. */
const CONFIGURATION_WAIT_MS = 5_000;
/** First retry after a failed read or write of the certificate; doubled up to the refresh interval. */
const CERTIFICATE_RETRY_BASE_MS = 2_000;
/** The certificate refresh's timeout in the SchedulerRegistry. */
export const CERTIFICATE_REFRESH_TIMEOUT = 'eviction-webhook-certificate-refresh';

/** Starts the server with the app (when enabled) and stops it last, after the manager has drained. */
@Injectable()
export class EvictionWebhookLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly server?: EvictionWebhookServer;
  readonly certificate?: WebhookCertificate;
  private readonly refreshIntervalMs: number = DEFAULT_CERTIFICATE_REFRESH_MS;
  private readonly log?: Logger;
  /** The pair the server serves, once it listens. */
  private serving?: PemPair;
  private failures = 0;
  private stopped = false;

  constructor(
    @Inject(EVICTION_WEBHOOK_MODULE_OPTIONS) options: EvictionWebhookModuleOptions,
    client: KubeClient,
    resolver: SecretResolver,
    @Inject(LOGGER) logger: Logger,
    private readonly scheduler: SchedulerRegistry,
  ) {
    if (!options.enabled) return;
    const log = logger.child({ component: 'eviction-webhook' });
    this.log = log;
    const events = options.events ?? 'failures';
    const admission = new EvictionAdmission({
      client,
      actions: actionsClientsFrom(resolver),
      events: events === 'none' ? undefined : new EventRecorder(client, 'aro-controller', log, events),
      logger: log,
      busyAnswerStandsMs: options.busyAnswerStandsMs,
    });
    this.server = new EvictionWebhookServer(
      admission,
      {
        port: options.port ?? 9443,
        bindAddress: options.bindAddress ?? '0.0.0.0',
        certDir: options.certDir,
        tls: options.tls,
        reviewTimeoutMs: options.reviewTimeoutMs ?? DEFAULT_REVIEW_TIMEOUT_MS,
      },
      log,
    );
    if (options.certificate) {
      this.certificate = new WebhookCertificate(client, options.certificate, log);
      this.refreshIntervalMs = options.certificate.refreshIntervalMs ?? DEFAULT_CERTIFICATE_REFRESH_MS;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (!this.server) return;
    if (!this.certificate) {
      await this.server.start();
      return;
    }
    await this.refreshCertificate();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unscheduleRefresh();
    await this.server?.stop();
  }

  /**
   * Brings the certificate up to date and serves it, then comes back after the refresh interval. A
   * failure (the API server unreachable, a right missing) does not stop the controller: until a
   * certificate is served the API server cannot call the webhook, and failurePolicy Ignore lets
   * evictions through with the busy runners' PodDisruptionBudget still in force; it is retried with
   * backoff.
   */
  private async refreshCertificate(): Promise<void> {
    const server = this.server;
    const certificate = this.certificate;
    if (!server || !certificate || this.stopped) return;
    let delay = this.refreshIntervalMs;
    let pair: PemPair | undefined;
    try {
      pair = await certificate.ensure();
      this.failures = 0;
      // Until the configuration exists nothing trusts the pair: look again soon, not in an hour.
      if (certificate.configurationMissing) delay = Math.min(this.refreshIntervalMs, CONFIGURATION_WAIT_MS);
    } catch (err) {
      this.failures++;
      delay = exponentialBackoffMs(this.failures, CERTIFICATE_RETRY_BASE_MS, this.refreshIntervalMs);
      this.log?.warn('Failed to bring the eviction webhook certificate up to date; retrying', {
        error: describeError(err),
        serving: this.serving !== undefined,
        retryInMs: delay,
      });
    }
    if (this.stopped) return;
    if (pair && !this.serving) {
      // A port that cannot be bound fails the start, as with a certificate from a folder.
      await server.start(pair);
      this.serving = pair;
    } else if (pair && this.serving && pair.cert !== this.serving.cert) {
      server.replaceCertificate(pair);
      this.serving = pair;
      this.log?.info('Serving the renewed eviction webhook certificate');
    }
    // A schedule (the renewal cadence, shortened while the configuration is missing or after a
    // failure): a timeout in the SchedulerRegistry, so it shows there and goes with the app.
    const timer = setTimeout(() => {
      this.unscheduleRefresh();
      this.refreshCertificate().catch((err: unknown) =>
        this.log?.error('The eviction webhook could not start serving', { error: describeError(err) }),
      );
    }, delay);
    // The refresh alone never keeps the process alive: shutdown is the app's.
    timer.unref();
    this.unscheduleRefresh();
    this.scheduler.addTimeout(CERTIFICATE_REFRESH_TIMEOUT, timer);
  }

  private unscheduleRefresh(): void {
    if (this.scheduler.doesExist('timeout', CERTIFICATE_REFRESH_TIMEOUT)) {
      this.scheduler.deleteTimeout(CERTIFICATE_REFRESH_TIMEOUT);
    }
  }
}

/**
 * The admission webhook on `pods/eviction` (eviction-admission.ts). Needs the global KubeModule,
 * SecretsModule and ObservabilityModule.
 */
@Module({})
export class EvictionWebhookModule {
  static forRoot(options: EvictionWebhookModuleOptions): DynamicModule {
    return {
      module: EvictionWebhookModule,
      imports: [ScheduleModule.forRoot()],
      providers: [{ provide: EVICTION_WEBHOOK_MODULE_OPTIONS, useValue: options }, EvictionWebhookLifecycle],
      exports: [EvictionWebhookLifecycle],
    };
  }
}
