import { Module, OnModuleInit } from '@nestjs/common';
import { EventKind, InformerCache } from '@aro/kube';
import { FleetController } from './fleet.controller';

/**
 * The fleet page (FLEET_PAGE=true, the chart's `fleetPage.enabled`): a read-only view of the scale sets
 * on the controller's HTTP server, every replica. Needs the global KubeModule.
 *
 * Its one cost is an Events informer (one watch on Events in the watched namespaces, which needs
 * list and watch on events), made here before the manager starts the cache; the other kinds are read
 * from the controllers' own informers.
 */
@Module({ controllers: [FleetController] })
export class FleetPageModule implements OnModuleInit {
  constructor(private readonly cache: InformerCache) {}

  onModuleInit(): void {
    this.cache.informerFor(EventKind);
  }
}
