import { BeforeApplicationShutdown, DynamicModule, Inject, Injectable, Module } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { Clock, KubeConfigSource } from '@aro/kube';
import { LOGGER, Logger, ObservabilityModule } from '@aro/observability';
import type { LoadedListenerConfig } from './config';
import { loadListenerKubeConfig } from './kube-config';
import { ScaleSetListener, ScaleSetListenerOptions } from './scale-set-listener';
import type { ListenerTuning } from './tuning';

export interface ListenerAppOptions {
  config: LoadedListenerConfig;
  logger: Logger;
  /** A kubeconfig to use instead of KUBECONFIG / in-cluster (tests). */
  kubeConfig?: KubeConfigSource;
  tuning?: Partial<ListenerTuning>;
  owner?: string;
  clock?: Clock;
  onLoopExit?: ScaleSetListenerOptions['onLoopExit'];
}

/** The options the app was started with, for the factories below. */
export const LISTENER_APP_OPTIONS = Symbol('aro.listenerAppOptions');
/** The kubeconfig the listener's Kubernetes clients use (KUBECONFIG, in-cluster, or the tests'). */
export const LISTENER_KUBE_CONFIG = Symbol('aro.listenerKubeConfig');

/** Stops the listener (loop, bookkeeping, session delete) before the app's HTTP server closes. */
@Injectable()
class ListenerLifecycle implements BeforeApplicationShutdown {
  constructor(@Inject(ScaleSetListener) private readonly listener: ScaleSetListener) {}

  beforeApplicationShutdown(): Promise<void> {
    return this.listener.stop();
  }
}

/**
 * The listener app: Observability (logger, the listener's own metrics registry) and the scale set's
 * listener, built by the injector from the options, the kubeconfig and the registry (Actions client,
 * Kubernetes clients without leader election: one pod per scale set). bootstrap serves the probes
 * and starts the loop once the app is created.
 */
@Module({})
export class ListenerAppModule {
  static forRoot(options: ListenerAppOptions, registry: Registry): DynamicModule {
    return {
      module: ListenerAppModule,
      imports: [ObservabilityModule.forRoot({ logger: options.logger, registry })],
      providers: [
        { provide: LISTENER_APP_OPTIONS, useValue: options },
        {
          provide: LISTENER_KUBE_CONFIG,
          useFactory: (): KubeConfigSource | Promise<KubeConfigSource> =>
            options.kubeConfig ?? loadListenerKubeConfig(),
        },
        {
          provide: ScaleSetListener,
          inject: [LISTENER_APP_OPTIONS, LISTENER_KUBE_CONFIG, Registry, LOGGER],
          useFactory: (o: ListenerAppOptions, kubeConfig: KubeConfigSource, reg: Registry, logger: Logger) =>
            new ScaleSetListener({
              config: o.config,
              logger,
              registry: reg,
              kubeConfig,
              tuning: o.tuning,
              owner: o.owner,
              clock: o.clock,
              onLoopExit: o.onLoopExit,
            }),
        },
        ListenerLifecycle,
      ],
      exports: [ScaleSetListener],
    };
  }
}
