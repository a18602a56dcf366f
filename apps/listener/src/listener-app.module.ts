import { BeforeApplicationShutdown, DynamicModule, Inject, Injectable, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import type { Clock } from '@aro/kube';
import { Logger, ObservabilityModule } from '@aro/observability';
import type { LoadedListenerConfig } from './config';
import { HealthController } from './health.controller';
import { ScaleSetListener, ScaleSetListenerOptions } from './scale-set-listener';
import type { ListenerTuning } from './tuning';

export interface ListenerAppOptions {
  config: LoadedListenerConfig;
  logger: Logger;
  /** A kubeconfig to use instead of KUBECONFIG / in-cluster (tests). */
  kubeConfig?: KubeConfig;
  tuning?: Partial<ListenerTuning>;
  owner?: string;
  clock?: Clock;
  onLoopExit?: ScaleSetListenerOptions['onLoopExit'];
}

/**
 * In the pod: the ServiceAccount's token (in-cluster). Elsewhere (tests, the sandbox): KUBECONFIG, or
 * ~/.kube/config.
 */
export function loadKubeConfig(env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (env.KUBECONFIG) kc.loadFromFile(env.KUBECONFIG);
  else if (env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

/** Stops the listener (loop, bookkeeping, session delete) while the probes still answer. */
@Injectable()
class ListenerLifecycle implements BeforeApplicationShutdown {
  constructor(@Inject(ScaleSetListener) private readonly listener: ScaleSetListener) {}

  beforeApplicationShutdown(): Promise<void> {
    return this.listener.stop();
  }
}

/**
 * The listener app: Observability (logger, the listener's own metrics registry), the scale set's
 * listener (Actions client, Kubernetes clients without leader election: one pod per scale set), and
 * the probes. The loop is started by bootstrap after the HTTP server listens.
 */
@Module({})
export class ListenerAppModule {
  static forRoot(options: ListenerAppOptions, registry: Registry): DynamicModule {
    const listener = new ScaleSetListener({
      config: options.config,
      logger: options.logger,
      registry,
      kubeConfig: options.kubeConfig ?? loadKubeConfig(),
      tuning: options.tuning,
      owner: options.owner,
      clock: options.clock,
      onLoopExit: options.onLoopExit,
    });
    return {
      module: ListenerAppModule,
      imports: [
        ObservabilityModule.forRoot({ logger: options.logger, registry }),
        TerminusModule.forRoot({ logger: false }),
      ],
      controllers: [HealthController],
      providers: [{ provide: ScaleSetListener, useValue: listener }, ListenerLifecycle],
      exports: [ScaleSetListener],
    };
  }
}
