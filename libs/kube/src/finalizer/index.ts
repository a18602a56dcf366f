export {
  finalizer,
  finalizerState,
  patchingFinalizers,
  reconcileFinalized,
  type FinalizedObjectSpec,
  released,
  type FinalizerHandlers,
  type FinalizerNames,
  type FinalizerState,
  type FinalizerWriter,
  type Released,
} from './finalizer';
export {
  FinalizingReconciler,
  type FinalizingPorts,
  type FinalizingReconcilerSpec,
} from './finalizing-reconciler';
