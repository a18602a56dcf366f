import type { JitConfigPayload } from './actions-service';

/**
 * Reads the simulator's `encodedJITConfig` (base64 JSON), as a simulated runner does to learn who
 * it is and where to report. Throws with the reason when the value was not issued by a simulator.
 */
export function decodeJitConfig(encoded: string): JitConfigPayload {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    throw new Error('the JIT config is not base64-encoded JSON');
  }
  const p = parsed as Partial<JitConfigPayload> | null;
  if (
    !p ||
    typeof p.runnerId !== 'number' ||
    typeof p.runnerName !== 'string' ||
    typeof p.runnerScaleSetId !== 'number' ||
    typeof p.simulatorUrl !== 'string'
  ) {
    throw new Error('the JIT config lacks runnerId, runnerName, runnerScaleSetId or simulatorUrl');
  }
  return p as JitConfigPayload;
}
