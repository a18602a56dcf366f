import {
  AUTOSCALING_LISTENER_FINALIZER,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
} from '@aro/api';
import {
  FinalizingReconciler,
  type Released,
  Result,
  RoleBindingKind,
  RoleKind,
  ServiceAccountKind,
  deleteIgnoringNotFound,
  done,
  getIgnoringNotFound,
  requeueAfter,
  sooner,
} from '@aro/kube';
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
  type ListenerPass,
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
export class AutoscalingListenerReconciler extends FinalizingReconciler<
  AutoscalingListener,
  ListenerContext
> {
  /** Where configs go: each listener's own Secret, or in shared mode its key of the shared one. */
  private readonly store =
    this.ctx.opts.listenerMode === 'shared'
      ? new SharedConfigSecret(this.ctx, this.ctx.sharedConfigCache)
      : new PodConfigSecret(this.ctx);
  private readonly config = new ListenerConfigWriter(this.ctx, this.store);
  private readonly pod = new ListenerPodLifecycle(this.ctx);
  private readonly finalizer = new ListenerFinalizer(this.ctx, this.store);
  /** Shared listener mode's path (no pod); undefined in the per-pod mode. */
  private readonly shared =
    this.ctx.opts.listenerMode === 'shared' ? new SharedListenerPath(this.ctx, this.config) : undefined;

  constructor(deps: AutoscalingListenerReconcilerDeps, options: AutoscalingListenerReconcilerOptions = {}) {
    super(listenerContext(deps, options), {
      kind: AutoscalingListenerKind,
      finalizer: { name: AUTOSCALING_LISTENER_FINALIZER },
    });
  }

  /** Deleting the listener: see {@link ListenerFinalizer}. */
  protected cleanup(deleting: ListenerPass): Promise<Result | Released> {
    return this.finalizer.finalize(deleting);
  }

  /** A live listener carrying the finalizer: what its pod needs, then the pod. */
  protected async apply(pass: ListenerPass): Promise<Result> {
    const { obj: listener, key, log } = pass;
    const { namespace = '', name = '' } = listener.metadata ?? {};
    const ars = await getIgnoringNotFound<AutoscalingRunnerSet>(
      this.ctx.cache,
      AutoscalingRunnerSetKind,
      listener.spec.autoscalingRunnerSetNamespace ?? '',
      listener.spec.autoscalingRunnerSetName ?? '',
    );
    if (!ars) {
      // A listener of no scale set would scale nothing: it goes (upstream does the same).
      log.info('The listener has no AutoscalingRunnerSet; deleting it');
      await deleteIgnoringNotFound(this.ctx.client, AutoscalingListenerKind, namespace, name);
      return done;
    }
    this.ctx.metrics?.labels(
      key,
      scaleSetMetricLabels(ars.metadata?.name ?? '', ars.metadata?.namespace ?? '', ars.spec.githubConfigUrl),
    );

    if (this.shared) return this.shared.reconcile(pass, ars);

    const sa = await applyListenerResource(this.ctx, ServiceAccountKind, buildServiceAccount(listener), log);
    const role = await applyListenerResource(this.ctx, RoleKind, buildRole(listener), log);
    const binding = await applyListenerResource(this.ctx, RoleBindingKind, buildRoleBinding(listener), log);
    const configHash = await this.config.reconcile(pass, ars);
    if (typeof configHash !== 'string') return configHash;

    const desired = buildListenerPod(
      listener,
      { metricsAddr: this.ctx.opts.metricsAddr, metricsEndpoint: this.ctx.opts.metricsEndpoint },
      [hashOf(sa), hashOf(role), hashOf(binding), configHash],
    );
    return sooner(
      await this.pod.reconcile(pass, desired),
      requeueAfter(this.ctx.configRefresh.refreshDueInMs(key) ?? this.ctx.opts.credentialRefreshIntervalMs),
    );
  }
}
