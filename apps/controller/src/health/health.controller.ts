import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import { Manager } from '@aro/kube';

/**
 * Probes for Kubernetes. /healthz fails when a watch or a controller is stuck (an informer silent past
 * its bound, a reconcile that never returns, a runnable that died), so the kubelet restarts a process
 * that cannot recover by itself. /readyz succeeds once the caches are synced, or while standing by as
 * a non-leader: a standby is ready to take over, and failing it would only churn the rollout.
 */
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly manager: Manager,
  ) {}

  @Get('healthz')
  @HealthCheck()
  liveness() {
    const status = this.manager.health();
    return this.managerCheck(status.healthy, { reason: status.reason ?? 'unhealthy' });
  }

  @Get('readyz')
  @HealthCheck()
  readiness() {
    const leader = this.manager.isLeader();
    return this.managerCheck(
      this.manager.isReady(),
      { leader, reason: 'caches are not synced yet' },
      { leader },
    );
  }

  /** One `manager` indicator, up with `upData` or down with `downData`. */
  private managerCheck(up: boolean, downData: Record<string, unknown>, upData: Record<string, unknown> = {}) {
    return this.health.check([
      () => {
        const session = this.indicators.check('manager');
        return up ? session.up(upData) : session.down(downData);
      },
    ]);
  }
}
