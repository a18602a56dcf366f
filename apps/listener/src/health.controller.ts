import { Controller, Get, Inject } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { ScaleSetListener } from './scale-set-listener';

/**
 * Probes for the listener pod. /healthz fails when the poll loop has not finished an iteration for
 * longer than its bound: a loop stuck on a call that never returns, which a restart cures. A loop that
 * keeps failing and backing off (revoked credentials, a conflicting session) is alive and stays
 * healthy, since a restart would not cure it and would only churn. /readyz succeeds while a message
 * session is open.
 */
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Inject(ScaleSetListener) private readonly listener: ScaleSetListener,
  ) {}

  @Get('healthz')
  @HealthCheck()
  liveness() {
    const h = this.listener.health();
    return this.check('pollLoop', h.healthy, { reason: h.reason }, { sinceLastCycleMs: h.sinceLastCycleMs });
  }

  @Get('readyz')
  @HealthCheck()
  readiness() {
    const state = this.listener.session.state;
    return this.check(
      'messageSession',
      this.listener.isReady(),
      { state, reason: 'no message session is open' },
      { state },
    );
  }

  private check(
    name: string,
    up: boolean,
    downData: Record<string, unknown>,
    upData: Record<string, unknown>,
  ) {
    return this.health.check([
      () => {
        const indicator = this.indicators.check(name);
        return up ? indicator.up(upData) : indicator.down(downData);
      },
    ]);
  }
}
