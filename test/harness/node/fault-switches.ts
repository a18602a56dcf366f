// Test-only fault switches of the controller: a preload the tests put into the process, never part of
// the product (the product image holds no such file; test/integration/image/product-image.test.ts lists
// it). Off unless ARO_TEST_FAULTS names a switch; they let a test break a running replica from outside,
// the way a real defect would, to prove what the kubelet and the Service do about it.
//
// `hang-on-sigusr2`: SIGUSR2 blocks the process's event loop for good (a stuck controller loop: no
// reconcile, no lease renewal, no answer on /healthz or /readyz), without spinning a core. The kubelet's
// readiness probe then takes the replica out of its Service and the liveness probe restarts it.
//
// How it reaches the controller on the real node (product-on-node.ts, `faultSwitches`): the file goes
// into a ConfigMap mounted through the chart's own `volumes`/`volumeMounts`, and the chart's `env` sets
// NODE_OPTIONS=--require <file> and ARO_TEST_FAULTS. That keeps the pods on the very image that ships,
// byte for byte, rather than a test image built FROM it: the suite judges what users run, the image is
// imported into the node once (an import is 40-85 s), and the switch reaches only the controller
// containers of the test install, never the listener pods the controller creates from the same image.
// A restarted container (the liveness probe's doing) mounts and preloads it again.
//
// It runs on the image's Node as it is (Node 24 strips the types, as for runner-program.ts), so it
// imports nothing and uses only erasable TypeScript.

/** The switches this preload knows; any other name in ARO_TEST_FAULTS is refused, loudly. */
export const FAULT_SWITCHES = ['hang-on-sigusr2'] as const;

function log(level: 'warn' | 'error', msg: string, fields: Record<string, unknown>): void {
  // One JSON line, as the controller's own logs are, so a reader of the container log sees it in place.
  process.stdout.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
}

/** Arms the switches `spec` names (comma-separated); returns the ones armed. */
export function armFaultSwitches(spec: string | undefined): string[] {
  const named = (spec ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);
  const unknown = named.filter((f) => !(FAULT_SWITCHES as readonly string[]).includes(f));
  if (unknown.length > 0) {
    // A misspelt switch would leave a test waiting for a fault that never comes: stop at once instead.
    log('error', 'TEST FAULT SWITCH unknown; known ones', { unknown, known: FAULT_SWITCHES });
    process.exit(2);
  }
  if (named.includes('hang-on-sigusr2')) {
    log('warn', 'TEST FAULT SWITCH armed: SIGUSR2 hangs this process for good', { faults: named });
    process.on('SIGUSR2', () => {
      log('warn', 'TEST FAULT: SIGUSR2 received; the event loop now hangs', { pid: process.pid });
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    });
  }
  return named;
}

armFaultSwitches(process.env.ARO_TEST_FAULTS);
