import {
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { KubeClient } from '@aro/kube';
import { LOGGER, type Logger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { EventRecorder } from '../events/event-recorder';
import { actionsClientsFrom } from '../ephemeral-runner/unregistration-queue';
import type { EventsMode } from '../shared/controller-parts';
import { EvictionAdmission } from './eviction-admission';
import { EvictionWebhookServer, type EvictionWebhookServerOptions } from './webhook-server';

export interface EvictionWebhookModuleOptions extends Partial<EvictionWebhookServerOptions> {
  /** Off: no server, and evictions of runner pods are reviewed by no one (the chart renders no webhook). */
  enabled: boolean;
  /** Which Events the webhook records (its Normal one only with `all`). */
  events?: EventsMode;
}

export const EVICTION_WEBHOOK_MODULE_OPTIONS = Symbol('aro.controllers.evictionWebhookOptions');
const DEFAULT_REVIEW_TIMEOUT_MS = 8_000;

/** Starts the server with the app (when enabled) and stops it last, after the manager has drained. */
@Injectable()
export class EvictionWebhookLifecycle implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly server?: EvictionWebhookServer;

  constructor(
    @Inject(EVICTION_WEBHOOK_MODULE_OPTIONS) options: EvictionWebhookModuleOptions,
    client: KubeClient,
    resolver: SecretResolver,
    @Inject(LOGGER) logger: Logger,
  ) {
    if (!options.enabled) return;
    const log = logger.child({ component: 'eviction-webhook' });
    const events = options.events ?? 'failures';
    const admission = new EvictionAdmission({
      client,
      actions: actionsClientsFrom(resolver),
      events: events === 'none' ? undefined : new EventRecorder(client, 'aro-controller', log, events),
      logger: log,
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
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.server?.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.server?.stop();
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
      providers: [{ provide: EVICTION_WEBHOOK_MODULE_OPTIONS, useValue: options }, EvictionWebhookLifecycle],
      exports: [EvictionWebhookLifecycle],
    };
  }
}
