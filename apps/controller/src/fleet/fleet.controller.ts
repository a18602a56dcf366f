import { Controller, Get, Header } from '@nestjs/common';
import { InformerCache, Manager } from '@aro/kube';
import { type FleetSnapshot, fleetSnapshot } from './fleet-snapshot';
import { renderFleetPage } from './fleet-page';

/** GET /fleet (the page) and /fleet.json (the same snapshot for scripts), both from the caches. */
@Controller()
export class FleetController {
  constructor(
    private readonly cache: InformerCache,
    private readonly manager: Manager,
  ) {}

  @Get('fleet')
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-store')
  async page(): Promise<string> {
    return renderFleetPage(await fleetSnapshot(this.cache, this.manager));
  }

  @Get('fleet.json')
  @Header('Cache-Control', 'no-store')
  snapshot(): Promise<FleetSnapshot> {
    return fleetSnapshot(this.cache, this.manager);
  }
}
