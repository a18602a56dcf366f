import type { ControlPlane } from './control-plane';
import { CONTROL_PLANE_GLOBAL } from './global-setup';

/** Stops the control plane global-setup started; one that was reused (ARO_TEST_CONTROL_PLANE) is left running. */
export default async function globalTeardown(): Promise<void> {
  const plane = (globalThis as Record<string, unknown>)[CONTROL_PLANE_GLOBAL] as ControlPlane | undefined;
  if (plane) {
    await plane.stop();
    delete (globalThis as Record<string, unknown>)[CONTROL_PLANE_GLOBAL];
  }
}
