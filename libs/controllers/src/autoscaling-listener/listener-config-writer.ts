import {
  Annotations,
  AutoscalingRunnerSet,
  ScaleSetConditionTypes,
  integrityHash,
  warmHeadroomOf,
} from '@aro/api';
import { Result, requeueAfter } from '@aro/kube';
import { classifyScaleSetFailure } from '../shared/failure-reasons';
import { buildListenerConfig, type ListenerConfigSettings } from './listener-config';
import type { ListenerConfigStore } from './listener-config-store';
import {
  type ListenerContext,
  type ListenerPass,
  patchListenerStatus,
  restartBackoffMs,
} from './listener-context';
import { setCondition } from '../shared/conditions';

/** The listener's config, built when `ListenerConfigRefresh` says so and delivered to `store`. */
export class ListenerConfigWriter {
  constructor(
    private readonly ctx: Pick<
      ListenerContext,
      'client' | 'resolver' | 'events' | 'metrics' | 'configRefresh' | 'opts' | 'now'
    >,
    private readonly store: ListenerConfigStore,
  ) {}

  /**
   * The config Secret, built only when `ListenerConfigRefresh` says so (building reads the
   * credential Secret live); its integrity hash, or the Result of a pass that could not build it.
   */
  async reconcile(
    { obj: listener, key, signal, log }: ListenerPass,
    ars: AutoscalingRunnerSet,
  ): Promise<string | Result> {
    const settings: ListenerConfigSettings = {
      scaleSetName:
        ars.metadata?.annotations?.[Annotations.runnerScaleSetName] ??
        ars.spec.runnerScaleSetName ??
        ars.metadata?.name ??
        '',
      logLevel: this.ctx.opts.logLevel,
      logFormat: this.ctx.opts.logFormat,
      metricsAddr: this.ctx.opts.metricsAddr,
      metricsEndpoint: this.ctx.opts.metricsEndpoint,
    };
    const inputs = integrityHash({ uid: listener.metadata?.uid, spec: listener.spec, settings });
    const current = await this.store.current(listener);
    const currentHash = current.hash;
    const reason = this.ctx.configRefresh.reasonToBuild(key, inputs, currentHash);
    if (reason === undefined && currentHash !== undefined) return currentHash;
    const headroomProblem = warmHeadroomOf(listener.metadata?.annotations).problem;
    if (headroomProblem) {
      // Not worth stopping the listener for: it runs with upstream's count, and says why.
      log.warn('Ignoring the warm headroom of the scale set', { problem: headroomProblem });
      this.ctx.events?.record(listener, 'Warning', 'InvalidWarmHeadroom', headroomProblem);
    }
    try {
      const config = await buildListenerConfig(
        this.ctx.resolver,
        listener,
        settings,
        AbortSignal.any([signal, AbortSignal.timeout(this.ctx.opts.resolveTimeoutMs)]),
      );
      const applied = await this.store.write(listener, config, current, log);
      this.ctx.metrics?.configBuilt(reason ?? 'missing');
      if (applied !== undefined) this.ctx.configRefresh.recordBuilt(key, inputs, applied);
      log.debug('Built the listener config', { reason });
      return applied ?? '';
    } catch (err) {
      if (signal.aborted) throw err;
      const failure = classifyScaleSetFailure(err, listener.spec.proxy);
      log.warn('Cannot build the listener configuration', { reason: failure.reason, err: failure.message });
      this.ctx.events?.record(listener, 'Warning', failure.reason, failure.message);
      await patchListenerStatus(this.ctx, listener, {
        conditions: setCondition(listener.status?.conditions, {
          type: ScaleSetConditionTypes.listenerRunning,
          status: 'False',
          reason: failure.reason,
          message: failure.message,
        }),
      });
      return requeueAfter(restartBackoffMs(this.ctx, listener.status?.restarts ?? 0));
    }
  }
}
