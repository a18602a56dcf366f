import type { Logger } from '@aro/observability';

/**
 * Test-only fault switches, off unless ARO_TEST_FAULTS names them (never set by the chart's defaults;
 * a test sets it through the chart's `env`). They let a test break a running replica from outside, the
 * way a real defect would, to prove what the kubelet and the Service do about it.
 *
 * `hang-on-sigusr2`: SIGUSR2 blocks the process's event loop for good (a stuck controller loop: no
 * reconcile, no lease renewal, no answer on /healthz or /readyz), without spinning a core. The kubelet's
 * readiness probe then takes the replica out of its Service and the liveness probe restarts it.
 */
export function installTestFaults(spec: string | undefined, logger: Logger): void {
  const faults = (spec ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  if (!faults.includes('hang-on-sigusr2')) return;
  logger.warn('TEST FAULT SWITCH armed: SIGUSR2 hangs this process for good', { faults });
  process.on('SIGUSR2', () => {
    logger.warn('TEST FAULT: SIGUSR2 received; the event loop now hangs');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  });
}
