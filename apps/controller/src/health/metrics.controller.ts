import { Controller, Get, Header } from '@nestjs/common';
import { PrometheusController } from '@willsoto/nestjs-prometheus';
import { Registry, prometheusContentType } from 'prom-client';

/**
 * /metrics, routed by @willsoto/nestjs-prometheus (its module sets the path on this controller), in the
 * Prometheus text format from the app's own registry.
 *
 * The module's own controller answers from prom-client's global registry. ARO's metrics live in one
 * registry per app (ObservabilityModule), so that two apps in one process (the tests, the sandbox's two
 * controller replicas) never see or double each other's series; this subclass, the module's documented
 * way to customise the route, answers from that registry instead. That is the whole adapter.
 */
@Controller()
export class AppRegistryPrometheusController extends PrometheusController {
  constructor(private readonly registry: Registry) {
    super();
  }

  @Get()
  @Header('Content-Type', prometheusContentType)
  @Header('Cache-Control', 'no-store')
  override index(): Promise<string> {
    return this.registry.metrics();
  }
}
