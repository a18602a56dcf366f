/**
 * How the EphemeralRunner controller performs with many runners at once, on this machine: a real
 * kube-apiserver and etcd, the Actions simulator, and the controller in one process. Prints figures;
 * asserts nothing (timings on a shared machine are not pass/fail material).
 *
 *   npm run bench -- [runners=50] [concurrency=4]
 *
 * Each runner is created, its pod started (the bench plays the kubelet), a job recorded (the bench
 * plays the listener), the runner exits 0 and is deleted by the controller.
 */
import type { V1Namespace } from '@kubernetes/client-node';
import { EphemeralRunnerKind } from '@aro/api';
import { KubeClient, NamespaceKind } from '@aro/kube';
import { startSimulator } from '../apps/simulator/src';
import {
  ControlPlane,
  apiserverRequestCounts,
  requestCountDelta,
  runnerContainerRunning,
  runnerContainerTerminated,
  waitFor,
} from '../test/harness';
import { CRD_PATHS } from '../test/harness/global-setup';
import { startControllerFixture } from '../test/integration/ephemeral-runner/fixture';

const runners = Number(process.argv[2] ?? 50);
const concurrency = Number(process.argv[3] ?? 4);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function main(): Promise<void> {
  const cp = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    withoutControllerManager: true,
    log: () => undefined,
  });
  process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
  const sim = await startSimulator({ seed: { timing: { autoStartJobs: false } } });
  try {
    const namespace = 'bench';
    await new KubeClient(cp.kubeConfig()).create<V1Namespace>(NamespaceKind, {
      metadata: { name: namespace },
    });
    const f = await startControllerFixture(sim, {
      kubeConfig: cp.kubeConfig(),
      namespace,
      config: { maxConcurrentReconciles: concurrency, events: 'none' },
    });
    await f.controller.sweep.sweepOnce();
    const before = await apiserverRequestCounts(cp.kubeConfig());
    sim.resetCallCounts();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = Date.now();
    const toPod: number[] = [];
    const toGone: number[] = [];

    const lifecycle = async (name: string): Promise<void> => {
      const t0 = Date.now();
      await f.createRunner(name);
      await waitFor(() => f.pod(name), { description: `pod ${name}`, intervalMs: 50, timeoutMs: 300_000 });
      toPod.push(Date.now() - t0);
      await runnerContainerRunning(namespace, name);
      await f.waitForRunner(name, (r) => r?.status?.phase === 'Pending', 'Pending', 300_000);
      await f.kube.mergePatchStatus(EphemeralRunnerKind, namespace, name, {
        status: { jobId: `job-${name}` },
      });
      await f.waitForRunner(name, (r) => r?.status?.phase === 'Running', 'Running', 300_000);
      sim.runnerExited(name, 0);
      await runnerContainerTerminated(namespace, name, 0, { phase: 'Succeeded' });
      await f.waitForRunner(name, (r) => r === undefined, 'gone', 300_000);
      toGone.push(Date.now() - t0);
    };
    await Promise.all(Array.from({ length: runners }, (_, i) => lifecycle(`bench-${i}`)));
    const elapsed = Date.now() - started;
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await apiserverRequestCounts(cp.kubeConfig());
    const heapAfter = process.memoryUsage().heapUsed;

    let controllerWrites = 0;
    const lines: string[] = [];
    for (const [key, delta] of requestCountDelta(before, after)) {
      if (!/^(POST|PUT|PATCH|DELETE) (ephemeralrunners|pods|secrets)(\/|$)/.test(key)) continue;
      // Writes the bench made itself: runner creation, binding, pod status, the listener's job patch.
      const own =
        key === 'POST ephemeralrunners' || key.startsWith('POST pods/binding') || key.includes('pods/status')
          ? delta
          : key === 'PATCH ephemeralrunners/status'
            ? runners
            : 0;
      if (delta - own > 0) lines.push(`  ${key}: ${((delta - own) / runners).toFixed(2)} per runner`);
      controllerWrites += delta - own;
    }
    const actionsCalls = Object.entries(sim.callCounts())
      .filter(([route]) => !/registration-token|runner-registration|access_tokens/.test(route))
      .reduce((sum, [, n]) => sum + n, 0);
    toPod.sort((a, b) => a - b);
    toGone.sort((a, b) => a - b);
    const reconciles = await f.registry.getSingleMetricAsString('controller_runtime_reconcile_total');
    const reconcileCount = [...reconciles.matchAll(/ (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    console.log(
      [
        `ARO runner throughput: ${runners} runners, ${concurrency} concurrent reconciles, Node ${process.version}`,
        `  wall time: ${(elapsed / 1000).toFixed(1)} s (${((runners * 1000) / elapsed).toFixed(1)} runners/s end to end)`,
        `  created -> pod: p50 ${percentile(toPod, 50)} ms, p95 ${percentile(toPod, 95)} ms`,
        `  created -> deleted (whole lifecycle): p50 ${percentile(toGone, 50)} ms, p95 ${percentile(toGone, 95)} ms`,
        `  controller writes: ${(controllerWrites / runners).toFixed(2)} per runner`,
        ...lines,
        `  Actions service calls: ${(actionsCalls / runners).toFixed(2)} per runner`,
        `  reconciles: ${(reconcileCount / runners).toFixed(1)} per runner`,
        `  heap: ${(heapBefore / 2 ** 20).toFixed(1)} MiB before, ${(heapAfter / 2 ** 20).toFixed(1)} MiB after`,
      ].join('\n'),
    );
    await f.stop();
  } finally {
    await sim.stop();
    await cp.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
