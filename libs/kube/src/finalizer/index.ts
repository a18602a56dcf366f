export {
  finalizer,
  finalizerState,
  patchingFinalizers,
  released,
  type FinalizerHandlers,
  type FinalizerNames,
  type FinalizerState,
  type FinalizerWriter,
  type Released,
} from './finalizer';
