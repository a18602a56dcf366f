import type { KeyedStore } from '@aro/kube';
/** Why a listener's config is built on a pass; the label of `aro_listener_config_builds_total`. */
export type ConfigBuildReason =
  /** No config built for this listener since the controller started. */
  | 'new'
  /** The listener's spec (credentials secret name, proxy, CA, bounds ...) or the settings changed. */
  | 'changed'
  /** The config Secret is gone, or holds another config than the one built (someone edited it). */
  | 'missing'
  /** The refresh interval passed: the credential Secret may have been rotated. */
  | 'refresh';

export interface Built {
  inputs: string;
  configHash: string;
  builtAt: number;
}

/**
 * Decides when a listener's config must be built again. Building it reads the GitHub credential
 * Secret (and the proxy Secret and CA ConfigMap) live: Secrets are not cached, since the controller
 * may not watch them (the chart grants get and list only, and a cache of every Secret in a namespace
 * would hold each runner's JIT config too). Most passes (the pod's status, the Role's events, the
 * listener's own status writes) change nothing the config is made of, so they reuse the config
 * already in the apiserver.
 *
 * A rotated credential has no event to announce it, so each listener's config is built again once
 * per interval (the reconciler requeues for it): a rotated Secret reaches the listener within the
 * interval without anything else happening, which a read on every pass alone did not promise.
 */
export class ListenerConfigRefresh {
  /** `built` is a slot of the reconciler's per-listener memory: it goes when the listener does. */
  constructor(
    private readonly intervalMs: number,
    private readonly now: () => number,
    private readonly built: KeyedStore<Built> = new Map<string, Built>(),
  ) {}

  /**
   * Why the config must be built on this pass, or undefined when the one in the apiserver
   * (`currentConfigHash`, its integrity hash; undefined when there is none) is current.
   */
  reasonToBuild(
    key: string,
    inputs: string,
    currentConfigHash: string | undefined,
  ): ConfigBuildReason | undefined {
    const last = this.built.get(key);
    if (!last) return 'new';
    if (last.inputs !== inputs) return 'changed';
    if (currentConfigHash !== last.configHash) return 'missing';
    if (this.now() - last.builtAt >= this.intervalMs) return 'refresh';
    return undefined;
  }

  recordBuilt(key: string, inputs: string, configHash: string): void {
    this.built.set(key, { inputs, configHash, builtAt: this.now() });
  }

  /** Milliseconds until the listener's next refresh is due; undefined before its first build. */
  refreshDueInMs(key: string): number | undefined {
    const last = this.built.get(key);
    return last ? Math.max(1, last.builtAt + this.intervalMs - this.now()) : undefined;
  }
}
