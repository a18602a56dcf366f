import {
  AUTOSCALING_LISTENER_FINALIZER,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
} from '@aro/api';
import {
  ReconcileContext,
  Reconciler,
  Request,
  Result,
  RoleBindingKind,
  RoleKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  done,
  getIgnoringNotFound,
  patchingFinalizers,
  requeueAfter,
  sooner,
  reconcileFinalized,
  requestKey,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import {
  buildListenerPod,
  buildRole,
  buildRoleBinding,
  buildServiceAccount,
  hashOf,
} from './listener-resources';
import {
  type AutoscalingListenerReconcilerDeps,
  type AutoscalingListenerReconcilerOptions,
  type ListenerContext,
  applyListenerResource,
  listenerContext,
} from './listener-context';
import { ListenerConfigWriter } from './listener-config-writer';
import { PodConfigSecret, SharedConfigSecret } from './listener-config-store';
import { SharedListenerPath } from './listener-shared-path';
import { ListenerFinalizer } from './listener-finalizer';
import { ListenerPodLifecycle } from './listener-pod-lifecycle';
import { scaleSetMetricLabels } from '../shared/scale-set-labels';

export type {
  AutoscalingListenerReconcilerDeps,
  AutoscalingListenerReconcilerOptions,
} from './listener-context';

/**
 * The AutoscalingListener reconciler: the listener pod and what it needs (ServiceAccount, Role and
 * RoleBinding in the scale set's namespace, config Secret), each rebuilt when its integrity hash
 * changes. In shared listener mode, no pod: see SharedListenerPath.
 *
 * An ended or evicted listener pod is recreated after an exponential backoff (upstream recreates at
 * once, #4656, which turns a revoked token or a rate limit into a tight loop of pods and API calls);
 * why and how often is on the listener's status, and each restart is an Event.
 */
export class AutoscalingListenerReconciler implements Reconciler {
  private readonly ctx: ListenerContext;
  private readonly config: ListenerConfigWriter;
  private readonly pod: ListenerPodLifecycle;
  private readonly finalizer: ListenerFinalizer;
  /** Shared listener mode's path (no pod); undefined in the per-pod mode. */
  private readonly shared?: SharedListenerPath;

  constructor(deps: AutoscalingListenerReconcilerDeps, options: AutoscalingListenerReconcilerOptions = {}) {
    this.ctx = listenerContext(deps, options);
    const store =
      this.ctx.opts.listenerMode === 'shared'
        ? new SharedConfigSecret(this.ctx)
        : new PodConfigSecret(this.ctx);
    this.config = new ListenerConfigWriter(this.ctx, store);
    this.pod = new ListenerPodLifecycle(this.ctx);
    this.finalizer = new ListenerFinalizer(this.ctx, store);
    if (this.ctx.opts.listenerMode === 'shared') this.shared = new SharedListenerPath(this.ctx, this.config);
  }

  reconcile(req: Request, { signal, log }: ReconcileContext): Promise<Result> {
    const key = requestKey(req);
    return reconcileFinalized<AutoscalingListener>(req, {
      reader: this.ctx.deps.cache,
      kind: AutoscalingListenerKind,
      finalizer: { name: AUTOSCALING_LISTENER_FINALIZER },
      write: patchingFinalizers(this.ctx.deps.client, AutoscalingListenerKind),
      forget: (gone) => this.forget(gone),
      apply: (live) => this.apply(live, key, signal, log),
      cleanup: (deleting) => this.finalizer.finalize(deleting, key, log),
    });
  }

  /** Everything this controller remembers of a listener, dropped once it is gone. */
  private forget(key: string): void {
    this.ctx.deps.metrics?.forget(key);
    this.ctx.configRefresh.forget(key);
  }

  /** A live listener carrying the finalizer: what its pod needs, then the pod. */
  private async apply(
    listener: AutoscalingListener,
    key: string,
    signal: AbortSignal,
    log: Logger,
  ): Promise<Result> {
    const { namespace = '', name = '' } = listener.metadata ?? {};
    const ars = await getIgnoringNotFound<AutoscalingRunnerSet>(
      this.ctx.deps.cache,
      AutoscalingRunnerSetKind,
      listener.spec.autoscalingRunnerSetNamespace ?? '',
      listener.spec.autoscalingRunnerSetName ?? '',
    );
    if (!ars) {
      // A listener of no scale set would scale nothing: it goes (upstream does the same).
      log.info('The listener has no AutoscalingRunnerSet; deleting it');
      await deleteIgnoringNotFound(this.ctx.deps.client, AutoscalingListenerKind, namespace, name);
      return done;
    }
    this.ctx.deps.metrics?.labels(
      key,
      scaleSetMetricLabels(ars.metadata?.name ?? '', ars.metadata?.namespace ?? '', ars.spec.githubConfigUrl),
    );

    if (this.shared) return this.shared.reconcile(listener, ars, key, signal, log);

    const sa = await applyListenerResource(this.ctx, ServiceAccountKind, buildServiceAccount(listener), log);
    const role = await applyListenerResource(this.ctx, RoleKind, buildRole(listener), log);
    const binding = await applyListenerResource(this.ctx, RoleBindingKind, buildRoleBinding(listener), log);
    const configHash = await this.config.reconcile(listener, ars, key, signal, log);
    if (typeof configHash !== 'string') return configHash;

    const desired = buildListenerPod(
      listener,
      { metricsAddr: this.ctx.opts.metricsAddr, metricsEndpoint: this.ctx.opts.metricsEndpoint },
      [hashOf(sa), hashOf(role), hashOf(binding), configHash],
    );
    return sooner(
      await this.pod.reconcile(listener, key, desired, log),
      requeueAfter(this.ctx.configRefresh.refreshDueInMs(key) ?? this.ctx.opts.credentialRefreshIntervalMs),
    );
  }
}
