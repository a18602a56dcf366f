import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root: test/sandbox/../.. */
export const REPO_ROOT = join(__dirname, '..', '..');

/**
 * Which pieces of the product this checkout has. The sandbox composes whatever is there and names
 * each missing piece in its progress, so that it runs on every branch while the pieces land:
 *
 * - `listener`: apps/listener/src/main.ts, the autoscaling listener process.
 * - `scaleSetControllers`: @aro/controllers exports the EphemeralRunnerSet, AutoscalingRunnerSet and
 *   AutoscalingListener controllers' setup functions (the controller app registers what the lib exports).
 * - `controllerChart` / `scaleSetChart`: charts/aro-controller and charts/aro-scale-set.
 *
 * With both the listener and the scale-set controllers the sandbox runs "scale-set mode", the product
 * as deployed: it applies an AutoscalingRunnerSet and queues jobs; everything else is the product's.
 * Without them it runs "runner mode": the sandbox itself stands in for the listener and the
 * EphemeralRunnerSet (one EphemeralRunner per queued job, up to --max-runners), and the product's
 * EphemeralRunner controller does the rest.
 */
export interface Capabilities {
  listener: boolean;
  scaleSetControllers: boolean;
  missingControllers: string[];
  controllerChart: boolean;
  scaleSetChart: boolean;
}

const SCALE_SET_SETUPS = [
  'setupEphemeralRunnerSetController',
  'setupAutoscalingRunnerSetController',
  'setupAutoscalingListenerController',
];

export const LISTENER_MAIN = join(REPO_ROOT, 'apps', 'listener', 'src', 'main.ts');
export const CONTROLLER_MAIN = join(REPO_ROOT, 'apps', 'controller', 'src', 'main.ts');
export const CONTROLLER_CHART = join(REPO_ROOT, 'charts', 'aro-controller');
export const SCALE_SET_CHART = join(REPO_ROOT, 'charts', 'aro-scale-set');

export async function detectCapabilities(): Promise<Capabilities> {
  const controllers = (await import('@aro/controllers')) as Record<string, unknown>;
  const missingControllers = SCALE_SET_SETUPS.filter((name) => typeof controllers[name] !== 'function');
  return {
    listener: existsSync(LISTENER_MAIN),
    scaleSetControllers: missingControllers.length === 0,
    missingControllers,
    controllerChart: existsSync(join(CONTROLLER_CHART, 'Chart.yaml')),
    scaleSetChart: existsSync(join(SCALE_SET_CHART, 'Chart.yaml')),
  };
}

/** Scale-set mode needs both halves: the controllers that make the listener, and the listener. */
export function scaleSetMode(c: Capabilities): boolean {
  return c.listener && c.scaleSetControllers;
}

/** One line per missing piece, saying what the sandbox does instead. */
export function describeSeams(c: Capabilities): string[] {
  const lines: string[] = [];
  if (!c.scaleSetControllers) {
    lines.push(
      `scale-set controllers not in this build (@aro/controllers lacks ${c.missingControllers.join(', ')}): ` +
        'the sandbox stands in for the listener and the EphemeralRunnerSet',
    );
  }
  if (!c.listener) {
    lines.push(
      'listener not in this build (apps/listener/src/main.ts absent): running without it; ' +
        'the sandbox creates one EphemeralRunner per queued job',
    );
  } else if (!c.scaleSetControllers) {
    lines.push('listener present but unused: nothing would create its AutoscalingListener');
  }
  if (!c.controllerChart) {
    lines.push('charts/aro-controller absent: the controller runs with the admin kubeconfig (no chart RBAC)');
  }
  if (!c.scaleSetChart) {
    lines.push("charts/aro-scale-set absent: the AutoscalingRunnerSet is the sandbox's own manifest");
  }
  return lines;
}
