import { KubeConfig } from '@kubernetes/client-node';
import { ControlPlane, type ControlPlaneInfo } from './control-plane';
import type { InstalledCrd } from './crds';

// Keyed by the file it was read from: a suite (the sandbox's, the least-privilege suite) that starts a
// control plane of its own points ARO_TEST_CONTROL_PLANE at it, and a second one in the same worker
// must not get the first one's (by then removed) CA and server.
let cached: { path: string; info: ControlPlaneInfo } | undefined;

/** The control plane this jest run uses, as global-setup.ts described it (or the one a suite started). */
export function controlPlaneInfo(): ControlPlaneInfo {
  const path = process.env.ARO_TEST_CONTROL_PLANE;
  if (!path) {
    throw new Error(
      'ARO_TEST_CONTROL_PLANE is not set: integration tests run under the jest `integration` project, whose ' +
        'globalSetup (test/harness/global-setup.ts) starts the control plane: npx jest --selectProjects integration <path>',
    );
  }
  if (cached?.path !== path) cached = { path, info: ControlPlane.readInfo(path) };
  return cached.info;
}

/** An admin (system:masters) client configuration for the test control plane. */
export function testKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(process.env.ARO_TEST_KUBECONFIG ?? controlPlaneInfo().kubeconfigPath);
  return kc;
}

/** The CRDs global-setup installed from libs/api/crds (Established and served in discovery). */
export function installedCrds(): InstalledCrd[] {
  return controlPlaneInfo().crds;
}

/** False when the control plane runs without kube-controller-manager (no GC, no namespace deletion). */
export function hasGarbageCollector(): boolean {
  return controlPlaneInfo().garbageCollector;
}

/**
 * `it` when kube-controller-manager runs, otherwise `it.skip` with a warning that names the test, so that a
 * missing GC shows up as skipped tests rather than as failures that hide real ones.
 */
export function itWithGarbageCollector(name: string, fn: () => Promise<void>, timeoutMs?: number): void {
  if (hasGarbageCollector()) {
    it(name, fn, timeoutMs);
    return;
  }
  process.stderr.write(`SKIPPED (no kube-controller-manager, so no garbage collection): ${name}\n`);
  it.skip(name, fn, timeoutMs);
}
