import {
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetPhase,
  EphemeralRunnerSet,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import { Result, isAlreadyExists, isNotFound, done } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { ListenerSettings, buildAutoscalingListener, listenerNameOf } from './runner-scale-set-resources';
import { type ScaleSetContext } from './runner-scale-set-context';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { findCondition, setCondition } from '../shared/conditions';

/** The set's AutoscalingListener, in the controller namespace: created, recreated on change, refused without an image. */
export class ListenerSync {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly status: ScaleSetStatusWriter,
  ) {}

  async reconcile(ars: AutoscalingRunnerSet, scaleSetId: number, log: Logger): Promise<void> {
    const settings: ListenerSettings = {
      controllerNamespace: this.ctx.opts.controllerNamespace,
      listenerImage: this.ctx.opts.listenerImage,
      imagePullSecrets: this.ctx.opts.listenerImagePullSecrets,
      excludeLabelPropagationPrefixes: this.ctx.opts.excludeLabelPropagationPrefixes,
    };
    const desired = buildAutoscalingListener(ars, scaleSetId, settings);
    const name = desired.metadata?.name ?? '';
    let current: AutoscalingListener | undefined;
    try {
      current = await this.ctx.cache.get<AutoscalingListener>(
        AutoscalingListenerKind,
        this.ctx.opts.controllerNamespace,
        name,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!current) {
      try {
        await this.ctx.client.create(AutoscalingListenerKind, desired);
        log.info('Created the AutoscalingListener', {
          listener: `${this.ctx.opts.controllerNamespace}/${name}`,
        });
      } catch (err) {
        // Still being deleted after a change: the next pass creates it.
        if (!isAlreadyExists(err)) throw err;
      }
      return;
    }
    if (current.metadata?.deletionTimestamp) return;
    if (
      current.metadata?.annotations?.[Annotations.integrityHash] !==
      desired.metadata?.annotations?.[Annotations.integrityHash]
    ) {
      log.info('The listener spec changed; recreating the listener', { listener: name });
      await this.delete(ars, log);
    }
  }

  async delete(ars: AutoscalingRunnerSet, log: Logger): Promise<boolean> {
    const name = listenerNameOf(ars);
    try {
      await this.ctx.client.delete(AutoscalingListenerKind, this.ctx.opts.controllerNamespace, name);
      log.debug('Deleted the listener', { listener: name });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  /**
   * Without a listener image no listener can run, so nothing would ever scale the set. The app still
   * starts (EphemeralRunner-only users need no image); each scale set says why it does not scale, on
   * its status and in one Warning Event, and waits: the image only changes with a restart.
   */
  async refuse(ars: AutoscalingRunnerSet, runnerSet: EphemeralRunnerSet, log: Logger): Promise<Result> {
    const message =
      'No listener image is configured: set CONTROLLER_MANAGER_CONTAINER_IMAGE on the controller (the chart sets it to the controller image)';
    const previous = findCondition(ars.status?.conditions, ScaleSetConditionTypes.listenerConfigured);
    if (previous?.reason !== ScaleSetReasons.listenerImageMissing) {
      log.warn('Cannot create the listener of the scale set', {
        reason: ScaleSetReasons.listenerImageMissing,
      });
      this.ctx.events?.record(ars, 'Warning', ScaleSetReasons.listenerImageMissing, message);
      await this.status.patchStatus(ars, {
        conditions: setCondition(
          ars.status?.conditions,
          {
            type: ScaleSetConditionTypes.listenerConfigured,
            status: 'False',
            reason: ScaleSetReasons.listenerImageMissing,
            message,
          },
          new Date(this.ctx.now()),
        ),
      });
    }
    await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Pending);
    return done;
  }
}
