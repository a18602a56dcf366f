export { RunningSimulator, startSimulator, type StartSimulatorOptions } from './simulator';
export { decodeJitConfig } from './jit-config';
export type { JitConfigPayload } from './actions-service';
export { DEFAULT_PAT, DEFAULT_TIMING, DEFAULT_TOKEN_LIFETIMES, loadSeedFile } from './seed';
export type * from './types';
export {
  FAULT_WINDOW_KINDS,
  type FaultWindowKind,
  type FaultWindowSpec,
  type FaultWindowView,
} from './fault-windows';
export {
  KeyVaultStandIn,
  type KeyVaultOutageAnswer,
  type KeyVaultOutageTarget,
  type KeyVaultRequest,
  type KeyVaultStandInOptions,
} from './azure-key-vault/key-vault-stand-in';
