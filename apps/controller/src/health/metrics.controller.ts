import { Controller, Get, Header } from '@nestjs/common';
import { Registry, prometheusContentType } from 'prom-client';

/** /metrics in the Prometheus text format, from the app's own registry (not prom-client's global one). */
@Controller()
export class MetricsController {
  constructor(private readonly registry: Registry) {}

  @Get('metrics')
  @Header('Content-Type', prometheusContentType)
  @Header('Cache-Control', 'no-store')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
