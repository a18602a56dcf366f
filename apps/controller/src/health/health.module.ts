import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { PrometheusModule } from '@willsoto/nestjs-prometheus';
import { HealthController } from './health.controller';
import { AppRegistryPrometheusController } from './metrics.controller';

/**
 * What Kubernetes and Prometheus ask the process, on every replica: /healthz and /readyz (terminus,
 * from the Manager's health and readiness) and /metrics (@willsoto/nestjs-prometheus, serving the app's
 * registry). Needs the global KubeModule and ObservabilityModule. The Prometheus module's own default
 * metrics stay off: they would go to prom-client's global registry, and the app's registry already
 * collects the process metrics (ObservabilityModule's `processMetrics`).
 */
@Module({
  imports: [
    TerminusModule.forRoot({ logger: false }),
    PrometheusModule.register({
      controller: AppRegistryPrometheusController,
      path: '/metrics',
      defaultMetrics: { enabled: false },
    }),
  ],
  controllers: [HealthController],
})
export class HealthModule {}
