import {
  BeforeApplicationShutdown,
  DynamicModule,
  Inject,
  Injectable,
  INestApplicationContext,
  Module,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { SchedulerRegistry, ScheduleModule } from '@nestjs/schedule';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { type Clock, KubeClient, type KubeConfigSource } from '@aro/kube';
import { userAgentFor } from '@aro/actions';
import { LOGGER, Logger, NestLoggerAdapter, ObservabilityModule } from '@aro/observability';
import type { ServeAddress } from '../config';
import { loadListenerKubeConfig } from '../kube-config';
import { ProbeServer } from '../probe-server';
import type { ListenerTuning } from '../tuning';
import { ConfigDirectory } from './config-directory';
import { ConfigSecret } from './config-secret';
import type { ListenerConfigSource } from './config-source';
import { SharedListenerHost } from './shared-listener-host';

/** The configs rescan's interval in the SchedulerRegistry. */
export const CONFIG_RESCAN_INTERVAL = 'listener-config-rescan';

export interface SharedListenerAppOptions {
  /**
   * Where the scale sets' configs are: a directory (see ConfigDirectory) or the Secret the
   * AutoscalingListener controller keeps (see ConfigSecret); exactly one.
   */
  configDir?: string;
  configSecret?: { namespace: string; name: string };
  /** How often the directory is read again for added, changed and removed scale sets. */
  rescanMs: number;
  logger: Logger;
  /** Metrics and probes; undefined disables them. */
  serve?: ServeAddress;
  metricsEndpoint: string;
  owner: string;
  kubeConfig?: KubeConfigSource;
  tuning?: Partial<ListenerTuning>;
  clock?: Clock;
}

const SHARED_OPTIONS = Symbol('aro.sharedListenerOptions');
const SHARED_KUBE_CONFIG = Symbol('aro.sharedListenerKubeConfig');

/** Stops every scale set's listener (each deletes its session) when the app closes. */
@Injectable()
class SharedListenerLifecycle implements BeforeApplicationShutdown {
  constructor(@Inject(SharedListenerHost) private readonly host: SharedListenerHost) {}

  beforeApplicationShutdown(): Promise<void> {
    return this.host.stop();
  }
}

/** The shared listener app: Observability and the host of every scale set's listener, built by the injector. */
@Module({})
export class SharedListenerAppModule {
  static forRoot(options: SharedListenerAppOptions, registry: Registry): DynamicModule {
    return {
      module: SharedListenerAppModule,
      imports: [ObservabilityModule.forRoot({ logger: options.logger, registry }), ScheduleModule.forRoot()],
      providers: [
        { provide: SHARED_OPTIONS, useValue: options },
        {
          provide: SHARED_KUBE_CONFIG,
          useFactory: (): KubeConfigSource | Promise<KubeConfigSource> =>
            options.kubeConfig ?? loadListenerKubeConfig(),
        },
        {
          provide: SharedListenerHost,
          inject: [SHARED_OPTIONS, SHARED_KUBE_CONFIG, Registry, LOGGER],
          useFactory: (
            o: SharedListenerAppOptions,
            kubeConfig: KubeConfigSource,
            reg: Registry,
            logger: Logger,
          ) =>
            new SharedListenerHost({
              registry: reg,
              logger,
              kubeConfig,
              tuning: o.tuning,
              owner: o.owner,
              clock: o.clock,
            }),
        },
        SharedListenerLifecycle,
      ],
      exports: [SharedListenerHost],
    };
  }
}

export interface StartedSharedListener {
  app: INestApplicationContext;
  host: SharedListenerHost;
  registry: Registry;
  port?: number;
  /** Reads the config directory now and applies it (the app also does so every `rescanMs`). */
  rescan(): Promise<void>;
  close(): Promise<void>;
}

/** Creates the shared listener app, serves metrics and probes, and serves the directory's scale sets. */
export async function startSharedListenerApp(
  options: SharedListenerAppOptions,
): Promise<StartedSharedListener> {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const app = await NestFactory.createApplicationContext(SharedListenerAppModule.forRoot(options, registry), {
    logger: new NestLoggerAdapter(options.logger),
  });
  const host = app.get(SharedListenerHost);
  let configClient: KubeClient | undefined;
  let source: ListenerConfigSource;
  if (options.configSecret) {
    configClient = new KubeClient(app.get<KubeConfigSource>(SHARED_KUBE_CONFIG), {
      userAgent: userAgentFor('listener-config'),
      requestTimeoutMs: 30_000,
      logger: options.logger,
    });
    source = new ConfigSecret(
      configClient,
      options.configSecret.namespace,
      options.configSecret.name,
      options.logger,
    );
  } else if (options.configDir) {
    source = new ConfigDirectory(options.configDir, options.logger);
  } else {
    await app.close();
    throw new Error('a shared listener needs a config directory or a config Secret');
  }
  const probes = new ProbeServer({
    registry,
    metricsEndpoint: options.metricsEndpoint,
    probes: host,
    logger: options.logger,
  });
  let port: number | undefined;
  try {
    if (options.serve) port = await probes.listen(options.serve);
  } catch (err) {
    await app.close();
    throw err;
  }
  const rescan = async (): Promise<void> => {
    try {
      await host.apply(await source.read());
    } catch (err) {
      // The source itself is unreadable (a volume going away, the apiserver down): keep serving what is served.
      options.logger.error('Reading the listener configs failed; serving what was read before', err, {
        source: source.where,
      });
    }
  };
  await rescan();
  // A schedule: an interval in the SchedulerRegistry, so it shows there and stops with the app.
  const timer = setInterval(() => void rescan(), options.rescanMs);
  timer.unref();
  const scheduler = app.get(SchedulerRegistry);
  scheduler.addInterval(CONFIG_RESCAN_INTERVAL, timer);
  const close = async (): Promise<void> => {
    if (scheduler.doesExist('interval', CONFIG_RESCAN_INTERVAL))
      scheduler.deleteInterval(CONFIG_RESCAN_INTERVAL);
    await app.close();
    await probes.close();
    configClient?.close();
  };
  return { app, host, registry, port, rescan, close };
}
