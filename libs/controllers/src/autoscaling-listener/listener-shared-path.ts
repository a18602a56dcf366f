import type { V1Pod, V1Role, V1RoleBinding, V1ServiceAccount } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingListener,
  type ResourceKind,
  AutoscalingRunnerSet,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
  listenerConfigSecretName,
} from '@aro/api';
import {
  type KeyedStore,
  PodKind,
  Result,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  getIgnoringNotFound,
  requeueAfter,
  sooner,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { buildRole, buildRoleBinding, hashOf } from './listener-resources';
import {
  type ListenerContext,
  type ListenerPass,
  applyListenerResource,
  patchListenerStatus,
} from './listener-context';
import type { ListenerConfigWriter } from './listener-config-writer';
import { setCondition } from '../shared/conditions';

/**
 * Shared mode: the shared listener Deployment serves the scale set, so the listener gets no pod and no
 * ServiceAccount of its own. What it gets: its Role (patch its EphemeralRunnerSet and its runners, as
 * in a pod) bound to the shared listener's account, and its config as its key of the shared config
 * Secret. Its status tells whether a replica holds the set's session, as the replica reported it on the
 * EphemeralRunnerSet; it is read again every `sharedStatusIntervalMs` from the cache (no API call).
 * Each listener is its own reconcile with its own keys: one that fails (its credentials unreadable, its
 * namespace gone) requeues alone.
 */
export class SharedListenerPath {
  /** Listeners whose per-pod config Secret this process has deleted or found gone (forgotten with them). */
  private readonly podConfigGone: KeyedStore<true>;

  constructor(
    private readonly ctx: ListenerContext,
    private readonly config: ListenerConfigWriter,
  ) {
    this.podConfigGone = ctx.memory.slot('pod-mode config secret gone');
  }

  async reconcile(pass: ListenerPass, ars: AutoscalingRunnerSet): Promise<Result> {
    const { obj: listener, key, log } = pass;
    await this.removePodModeLeftovers(listener, key, log);
    await this.applyUnlessCachedUpToDate(RoleKind, buildRole(listener), log);
    await this.applyUnlessCachedUpToDate(
      RoleBindingKind,
      buildRoleBinding(listener, this.ctx.opts.sharedServiceAccountName),
      log,
    );
    const configHash = await this.config.reconcile(pass, ars);
    if (typeof configHash !== 'string') return configHash;
    await this.reportSession(listener, key);
    return sooner(
      requeueAfter(this.ctx.opts.sharedStatusIntervalMs),
      requeueAfter(this.ctx.configRefresh.refreshDueInMs(key) ?? this.ctx.opts.credentialRefreshIntervalMs),
    );
  }

  /**
   * The Role or RoleBinding, written when the informer's copy is missing or differs from `desired`.
   * This path passes over every listener every `sharedStatusIntervalMs`; reading both live each time
   * was about three of the four extra reads per job shared mode cost against pod mode. The cache only
   * short-cuts the unchanged case: a copy it holds that someone changed or deleted since wakes this
   * listener through the watch, and anything but "up to date" is written from a live read.
   */
  private async applyUnlessCachedUpToDate<T extends V1Role | V1RoleBinding>(
    kind: ResourceKind,
    desired: T,
    log: Logger,
  ): Promise<void> {
    const { namespace = '', name = '' } = desired.metadata ?? {};
    const cached = await getIgnoringNotFound<T>(this.ctx.cache, kind, namespace, name);
    if (cached !== undefined && hashOf(cached) === hashOf(desired)) return;
    await applyListenerResource(this.ctx, kind, desired, log);
  }

  /**
   * A listener that ran in a pod before the switch to shared mode: its pod would hold the session the
   * shared listener needs (409 for both until one gives up), so it goes, with its ServiceAccount and
   * its config Secret (a copy of the set's credentials nothing reads or refreshes any more; its owner
   * reference would keep it until the listener goes). Secrets are not watched, so the Secret is deleted
   * blind, once per listener and process, not on every status pass.
   */
  private async removePodModeLeftovers(
    listener: AutoscalingListener,
    key: string,
    log: Logger,
  ): Promise<void> {
    const { namespace = '', name = '' } = listener.metadata ?? {};
    const pod = await getIgnoringNotFound<V1Pod>(this.ctx.cache, PodKind, namespace, name);
    if (pod && !pod.metadata?.deletionTimestamp) {
      log.info('Shared listener mode: deleting the listener pod of the per-pod mode');
      await deleteIgnoringNotFound(this.ctx.client, PodKind, namespace, name, {
        uid: pod.metadata?.uid,
      });
    }
    const sa = await getIgnoringNotFound<V1ServiceAccount>(
      this.ctx.cache,
      ServiceAccountKind,
      namespace,
      name,
    );
    if (sa) await deleteIgnoringNotFound(this.ctx.client, ServiceAccountKind, namespace, name);
    if (!this.podConfigGone.get(key)) {
      await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, listenerConfigSecretName(name));
      this.podConfigGone.set(key, true);
    }
  }

  private async reportSession(listener: AutoscalingListener, key: string): Promise<void> {
    const ers = await getIgnoringNotFound<EphemeralRunnerSet>(
      this.ctx.cache,
      EphemeralRunnerSetKind,
      listener.spec.autoscalingRunnerSetNamespace ?? '',
      listener.spec.ephemeralRunnerSetName ?? '',
    );
    const told = ers?.metadata?.annotations?.[Annotations.listenerSession] ?? '';
    const [state, owner] = told.split(' ');
    const open = state === 'open' && !!owner;
    const where = `${listener.metadata?.namespace}/${this.ctx.opts.sharedConfigSecretName}`;
    this.ctx.metrics?.set(key, open);
    await patchListenerStatus(this.ctx, listener, {
      conditions: setCondition(listener.status?.conditions, {
        type: ScaleSetConditionTypes.listenerRunning,
        status: open ? 'True' : 'False',
        reason: open ? ScaleSetReasons.sharedListenerSessionOpen : ScaleSetReasons.sharedListenerNoSession,
        message: open
          ? `The shared listener's replica ${owner} holds the scale set's message session`
          : state === 'closed'
            ? `The shared listener's replica ${owner} closed the scale set's message session; its config is in Secret ${where}`
            : `The config is in Secret ${where}; no replica of the shared listener has opened the scale set's message session yet`,
      }),
    });
  }
}
