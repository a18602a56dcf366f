import type { V1Secret } from '@kubernetes/client-node';
import {
  AutoscalingListener,
  LabelValues,
  Labels,
  ListenerConfig,
  integrityHash,
  listenerConfigSecretName,
} from '@aro/api';
import {
  SecretKind,
  deleteIgnoringNotFound,
  getIgnoringNotFound,
  isAlreadyExists,
  isNotFound,
} from '@aro/kube';
import type { Logger } from '@aro/observability';
import { buildConfigSecret, hashOf } from './listener-resources';
import { type ListenerContext, applyListenerResource } from './listener-context';

/**
 * Where a listener's config.json is delivered: its own config Secret (a pod per scale set), or its key
 * in the one Secret the shared listener reads. Either way the config is known by a hash, so the
 * refresh rule (ListenerConfigRefresh) is the same in both modes.
 */
export interface ListenerConfigStore {
  /** The config delivered now: its hash (undefined when there is none) and what was read for it. */
  current(listener: AutoscalingListener): Promise<DeliveredConfig>;
  /** Delivers `config` over `current`; its hash. */
  write(
    listener: AutoscalingListener,
    config: ListenerConfig,
    current: DeliveredConfig,
    log: Logger,
  ): Promise<string | undefined>;
  /** Takes the listener's config away (deletion). */
  remove(listener: AutoscalingListener): Promise<void>;
}

export interface DeliveredConfig {
  hash?: string;
  /** The Secret read for it, handed back to `write` (which then need not read it again). */
  secret?: V1Secret;
}

/** A pod per scale set: the `<listener>-config` Secret the pod mounts. */
export class PodConfigSecret implements ListenerConfigStore {
  constructor(private readonly ctx: ListenerContext) {}

  async current(listener: AutoscalingListener): Promise<DeliveredConfig> {
    const secret = await getIgnoringNotFound<V1Secret>(
      this.ctx.client,
      SecretKind,
      listener.metadata?.namespace ?? '',
      listenerConfigSecretName(listener.metadata?.name ?? ''),
    );
    return { hash: hashOf(secret), secret };
  }

  async write(
    listener: AutoscalingListener,
    config: ListenerConfig,
    current: DeliveredConfig,
    log: Logger,
  ): Promise<string | undefined> {
    const secret = buildConfigSecret(listener, config);
    return hashOf(await applyListenerResource(this.ctx, SecretKind, secret, log, current.secret));
  }

  async remove(listener: AutoscalingListener): Promise<void> {
    const { namespace = '', name = '' } = listener.metadata ?? {};
    await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, listenerConfigSecretName(name));
  }
}

/** The key of a listener in the shared config Secret: the listener's name (they share one namespace). */
export function sharedConfigKey(listener: AutoscalingListener): string {
  return `${listener.metadata?.name ?? ''}.json`;
}

/**
 * Shared mode: one Secret in the listeners' namespace holds every listener's config.json under its own
 * key, which the shared listener reads by name (the one Secret its account may get). Each listener's
 * key is written by a merge patch of that key alone, so the listeners' reconciles never conflict and a
 * failure to build one set's config leaves the other keys as they are.
 */
export class SharedConfigSecret implements ListenerConfigStore {
  constructor(private readonly ctx: ListenerContext) {}

  private get name(): string {
    return this.ctx.opts.sharedConfigSecretName;
  }

  async current(listener: AutoscalingListener): Promise<DeliveredConfig> {
    const secret = await getIgnoringNotFound<V1Secret>(
      this.ctx.client,
      SecretKind,
      listener.metadata?.namespace ?? '',
      this.name,
    );
    const value = secret?.data?.[sharedConfigKey(listener)];
    return {
      hash: value === undefined ? undefined : integrityHash(Buffer.from(value, 'base64').toString('utf8')),
    };
  }

  async write(
    listener: AutoscalingListener,
    config: ListenerConfig,
    _current: DeliveredConfig,
    log: Logger,
  ): Promise<string> {
    const namespace = listener.metadata?.namespace ?? '';
    const json = JSON.stringify(config);
    const data = { [sharedConfigKey(listener)]: Buffer.from(json, 'utf8').toString('base64') };
    try {
      await this.ctx.client.mergePatch(SecretKind, namespace, this.name, { data });
    } catch (err) {
      if (!isNotFound(err)) throw err;
      await this.create(namespace, data, log);
    }
    log.debug('Wrote the listener config into the shared listener’s Secret', {
      secret: `${namespace}/${this.name}`,
      key: sharedConfigKey(listener),
    });
    return integrityHash(json);
  }

  /** The Secret, on the first config written (another listener's reconcile may have made it meanwhile). */
  private async create(namespace: string, data: Record<string, string>, log: Logger): Promise<void> {
    try {
      await this.ctx.client.create<V1Secret>(SecretKind, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          name: this.name,
          namespace,
          labels: { [Labels.partOf]: LabelValues.partOf, [Labels.component]: LabelValues.componentListener },
        },
        data,
      });
      log.info('Created the shared listener’s config Secret', { secret: `${namespace}/${this.name}` });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      await this.ctx.client.mergePatch(SecretKind, namespace, this.name, { data });
    }
  }

  async remove(listener: AutoscalingListener): Promise<void> {
    try {
      await this.ctx.client.mergePatch(SecretKind, listener.metadata?.namespace ?? '', this.name, {
        data: { [sharedConfigKey(listener)]: null },
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
