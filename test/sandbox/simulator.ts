import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@aro/observability';
import { startSimulator, type RunningSimulator } from '../../apps/simulator/src';

/** The simulator's usual port, which examples/manifests name (http://127.0.0.1:8910/octo). */
export const SIMULATOR_PORT = 8910;

/**
 * The simulator as GitHub, in-process: the sandbox reads the service's jobs, registrations and counters
 * several times a second for the progress view and plays every runner against it; over HTTP that would
 * be a process more to manage and a JSON round trip per look. The product reaches it over HTTP as ever.
 * Its log goes to `<workDir>/simulator.log`; `stop` stops it and closes the log.
 */
export async function startSandboxSimulator(
  workDir: string,
): Promise<{ sim: RunningSimulator; stop: () => Promise<void> }> {
  const simLog = createWriteStream(join(workDir, 'simulator.log'));
  // A listener killed outright (--chaos) leaves its message session open; a new one may take over
  // once the old one is idle for sessionIdleTimeoutMs. The simulator's default (120 s) would stall the
  // run for two minutes; 15 s, with long polls of 10 s so that a live listener is never idle that
  // long, shows the same handover in seconds.
  const simOptions = {
    seed: { timing: { autoStartJobs: true, sessionIdleTimeoutMs: 15_000, longPollTimeoutMs: 10_000 } },
    logger: createLogger({ level: 'info', format: 'json', destination: simLog }),
  };
  // The usual port when it is free, so that examples/manifests apply as they are against --keep.
  const sim = await startSimulator({ ...simOptions, port: SIMULATOR_PORT }).catch(() =>
    startSimulator({ ...simOptions, port: 0 }),
  );
  return {
    sim,
    stop: async () => {
      await sim.stop();
      simLog.end();
    },
  };
}
