/*
 * The runner registrations on the Actions service, apart from any one controller: the background
 * unregistration queue (with its Nest module and workers), the ledger of scale sets whose registrations
 * the sweep audits, the orphan sweep and its leak audit, and the rules of when a runner holds its
 * registration. The EphemeralRunner controller, the AutoscalingRunnerSet controller and the eviction
 * webhook use them; none of them is imported from another controller's folder.
 */
export {
  FIRST_AUDIT_DELAY_MS,
  OrphanRegistrationSweep,
  type OrphanRegistrationSweepOptions,
} from './orphan-sweep';
export { runnerSelfDeregistered } from './runner-registration';
export * from './unregistration-queue';
export {
  UNREGISTRATION_MODULE_OPTIONS,
  UnregistrationModule,
  UnregistrationWorkers,
  type UnregistrationModuleOptions,
} from './unregistration.module';
export {
  SCALE_SET_LEDGER_NAME,
  ScaleSetLedger,
  holderOf,
  rememberingScaleSets,
  type ScaleSetLedgerEntry,
  type ScaleSetLedgerOptions,
} from './scale-set-ledger';
