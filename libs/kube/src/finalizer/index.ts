export {
  finalizer,
  finalizerState,
  released,
  type FinalizerHandlers,
  type FinalizerNames,
  type FinalizerState,
  type FinalizerWriter,
  type Released,
} from './finalizer';
