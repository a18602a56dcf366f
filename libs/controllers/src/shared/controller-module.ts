import { type ControllerModule, controllerModule } from '@aro/kube';
import { type ControllerParts, controllerPartsOf } from './controller-parts';

/** A controller module's options: the controller's own, and the clock of its time-based branches (tests). */
export type ControllerModuleOptions<Config extends object> = Config & { now?: () => number };

/**
 * The Nest module of a controller built from the common {@link ControllerParts} by its
 * `setupXController(parts, config)`.
 */
export function partsControllerModule<Config extends object, Registered>(
  name: string,
  setup: (parts: ControllerParts, config: Config) => Registered,
): ControllerModule<ControllerModuleOptions<Config>, Registered> {
  return controllerModule({
    name,
    register: ({ now, ...config }: ControllerModuleOptions<Config>, providers) =>
      setup(controllerPartsOf(providers, now), config as unknown as Config),
  });
}
