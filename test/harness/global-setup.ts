import { resolve } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { ControlPlane, type ControlPlaneInfo } from './control-plane';
import { installCrds } from './crds';
import { kubeRequest } from './rest';
import { writeFileSync } from 'node:fs';
import { useTimeScaleForLoad } from './time-scale';

/** Where the CRDs live; whatever YAML is there gets installed. */
export const CRD_PATHS = [resolve(__dirname, '..', '..', 'libs', 'api', 'crds')];

/** Shared with global-teardown.ts: jest runs both in the same context. */
export const CONTROL_PLANE_GLOBAL = '__ARO_CONTROL_PLANE__';

/**
 * One control plane for the whole jest run. What tests need goes into process.env, which the jest workers
 * inherit: ARO_TEST_CONTROL_PLANE (path of the control plane's JSON description) and ARO_TEST_KUBECONFIG.
 *
 * With ARO_TEST_CONTROL_PLANE already set (e.g. to what `npm run control-plane` printed), that control
 * plane is reused, which saves the start and keeps it around for kubectl after the run.
 */
export default async function globalSetup(): Promise<void> {
  setTimeScale();
  const reused = process.env.ARO_TEST_CONTROL_PLANE;
  if (reused) {
    await reuseControlPlane(reused);
    return;
  }
  const plane = await ControlPlane.start({
    crdPaths: CRD_PATHS,
    handleSignals: true,
    // To see how the suites behave where kube-controller-manager cannot be had.
    withoutControllerManager: process.env.ARO_TEST_WITHOUT_CONTROLLER_MANAGER === 'true',
  });
  (globalThis as Record<string, unknown>)[CONTROL_PLANE_GLOBAL] = plane;
  process.env.ARO_TEST_CONTROL_PLANE = plane.infoPath;
  process.env.ARO_TEST_KUBECONFIG = plane.info.kubeconfigPath;
}

/**
 * The run's time scale, derived from the load when it starts unless ARO_TEST_TIME_SCALE says, and put
 * in the environment the workers inherit: every worker then bounds its waits alike.
 */
function setTimeScale(): void {
  process.stderr.write(`[harness] ${useTimeScaleForLoad()}\n`);
}

async function reuseControlPlane(infoPath: string): Promise<void> {
  let info: ControlPlaneInfo;
  try {
    info = ControlPlane.readInfo(infoPath);
  } catch (err) {
    throw new Error(
      `ARO_TEST_CONTROL_PLANE=${infoPath} cannot be read (${(err as Error).message}); unset it to start a fresh control plane`,
      { cause: err },
    );
  }
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfigPath);
  const health = await kubeRequest(kc, { path: '/healthz', timeoutMs: 5_000 }).catch((err: Error) => ({
    status: 0,
    body: err.message,
  }));
  if (health.status !== 200) {
    throw new Error(
      `The control plane in ARO_TEST_CONTROL_PLANE=${infoPath} does not answer /healthz at ${info.server}: ${String(health.body)}`,
    );
  }
  // The CRD files may have changed since that control plane started.
  info.crds = await installCrds(kc, CRD_PATHS);
  writeFileSync(infoPath, JSON.stringify(info, null, 2));
  process.env.ARO_TEST_KUBECONFIG = info.kubeconfigPath;
  process.stderr.write(`[control-plane] reusing ${info.server} from ${infoPath}\n`);
}
