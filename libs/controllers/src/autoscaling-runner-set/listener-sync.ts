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
import { type Reader, Result, deleteIgnoringNotFound, done, isAlreadyExists } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { ListenerSettings, buildAutoscalingListener, listenerNameOf } from './runner-scale-set-resources';
import { type ScaleSetContext } from './runner-scale-set-context';
import type { ScaleSetStatusWriter } from './scale-set-status';
import { findCondition } from '../shared/conditions';

/**
 * The set's AutoscalingListener, in the controller namespace: created under upstream's name, recreated
 * on change, refused without an image; any other listener of the set is deleted, so one serves it.
 */
export class ListenerSync {
  constructor(
    private readonly ctx: ScaleSetContext,
    private readonly status: ScaleSetStatusWriter,
  ) {}

  async reconcile(
    ars: AutoscalingRunnerSet,
    scaleSetId: number,
    runnerSetName: string,
    log: Logger,
  ): Promise<void> {
    const settings: ListenerSettings = {
      controllerNamespace: this.ctx.opts.controllerNamespace,
      listenerImage: this.ctx.opts.listenerImage,
      imagePullSecrets: this.ctx.opts.listenerImagePullSecrets,
      excludeLabelPropagationPrefixes: this.ctx.opts.excludeLabelPropagationPrefixes,
    };
    const desired = buildAutoscalingListener(ars, scaleSetId, settings, runnerSetName);
    const name = desired.metadata?.name ?? '';
    const listeners = await this.listenersOf(ars, this.ctx.cache);
    const current = listeners.find((l) => l.metadata?.name === name);
    // A listener of this set under another name (upstream's controller made it beside ours before
    // being stopped, an older ARO named it otherwise, the set's group or URL changed): two listeners
    // would race for the one message session, so it goes.
    const others = listeners.filter((l) => l !== current);
    await this.deleteListeners(others, log, name);
    if (!current) {
      // Ours starts once the other one is gone (its pod deletes its session on the way out); the
      // listener watch wakes the set when it has.
      if (others.length > 0) return;
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
      await this.deleteListeners([current], log);
    }
  }

  /**
   * Deletes every listener of the set, whatever its name. `live` reads them from the apiserver (the
   * set's deletion must not miss one the cache has not delivered yet) and returns the ones that were
   * there, deleting; without it the cache is read (the drain passes run every second), and the
   * listener under our own name is deleted by name as well, in case this controller has just created
   * it and the cache does not have it yet.
   */
  async delete(
    ars: AutoscalingRunnerSet,
    log: Logger,
    { live = false }: { live?: boolean } = {},
  ): Promise<AutoscalingListener[]> {
    const listeners = await this.listenersOf(ars, live ? this.ctx.client : this.ctx.cache);
    await this.deleteListeners(listeners, log);
    const own = listenerNameOf(ars);
    if (!live && !listeners.some((l) => l.metadata?.name === own)) {
      await deleteIgnoringNotFound(
        this.ctx.client,
        AutoscalingListenerKind,
        this.ctx.opts.controllerNamespace,
        own,
      );
    }
    return listeners;
  }

  /**
   * The AutoscalingListeners of a set in the controller namespace, found by the set they scale
   * (`spec.autoscalingRunnerSetNamespace`/`Name`, which ARO and upstream both fill), not by name:
   * the name differs between systems and versions, and labels can be overridden by the set's
   * listener metadata.
   */
  private async listenersOf(ars: AutoscalingRunnerSet, reader: Reader): Promise<AutoscalingListener[]> {
    const all = await reader.list<AutoscalingListener>(AutoscalingListenerKind, {
      namespace: this.ctx.opts.controllerNamespace,
    });
    const namespace = ars.metadata?.namespace ?? '';
    const name = ars.metadata?.name ?? '';
    return all.filter(
      (l) =>
        l.spec?.autoscalingRunnerSetName === name &&
        (l.spec.autoscalingRunnerSetNamespace ?? '') === namespace,
    );
  }

  /** Deletes the listeners not already on their way out; their finalizer removes what each used. */
  private async deleteListeners(
    listeners: readonly AutoscalingListener[],
    log: Logger,
    expectedName?: string,
  ): Promise<void> {
    for (const listener of listeners) {
      if (listener.metadata?.deletionTimestamp) continue;
      const name = listener.metadata?.name ?? '';
      const deleted = await deleteIgnoringNotFound(
        this.ctx.client,
        AutoscalingListenerKind,
        this.ctx.opts.controllerNamespace,
        name,
      );
      if (!deleted) continue;
      if (expectedName) {
        log.info('Deleted a listener of the scale set under another name', {
          listener: name,
          expectedName,
        });
      } else {
        log.debug('Deleted the listener', { listener: name });
      }
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
      await this.status.setCondition(ars, {
        type: ScaleSetConditionTypes.listenerConfigured,
        status: 'False',
        reason: ScaleSetReasons.listenerImageMissing,
        message,
      });
    }
    await this.status.updateStatus(ars, runnerSet, AutoscalingRunnerSetPhase.Pending);
    return done;
  }
}
