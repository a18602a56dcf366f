import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';

/**
 * What Kubernetes and Prometheus ask the process, on every replica: /healthz and /readyz (terminus,
 * from the Manager's health and readiness) and /metrics (the app's registry). Needs the global
 * KubeModule and ObservabilityModule.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController, MetricsController],
})
export class HealthModule {}
