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
import type { SharedConfigSecretCache } from './shared-config-cache';

/** How long this store's own write stands in for a watch that has not delivered it yet. */
const OWN_WRITE_STANDS_MS = 30_000;

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
 *
 * The Secret is read from `cache` (a watch of that one object) once it has listed, live before. The
 * watch trails this store's own writes by a moment, and a pass right after a write (its status patch
 * wakes the listener again at once) would take the old copy for a changed key and build the config
 * again: so for {@link OWN_WRITE_STANDS_MS} after a write, until the watch delivers it, the write's
 * answer (the whole Secret as the server stored it) stands in for the cached copy.
 */
export class SharedConfigSecret implements ListenerConfigStore {
  private lastWrite: { secret: V1Secret; at: number } | undefined;

  constructor(
    private readonly ctx: ListenerContext,
    private readonly cache?: Pick<SharedConfigSecretCache, 'read'>,
  ) {}

  private get name(): string {
    return this.ctx.opts.sharedConfigSecretName;
  }

  async current(listener: AutoscalingListener): Promise<DeliveredConfig> {
    const secret = await this.read(listener.metadata?.namespace ?? '');
    const value = secret?.data?.[sharedConfigKey(listener)];
    return {
      hash: value === undefined ? undefined : integrityHash(Buffer.from(value, 'base64').toString('utf8')),
    };
  }

  /** The Secret: cached when the watch has listed it (see the class comment), live otherwise. */
  private async read(namespace: string): Promise<V1Secret | undefined> {
    const cached = this.cache?.read(namespace) ?? { known: false };
    if (!cached.known) {
      return getIgnoringNotFound<V1Secret>(this.ctx.client, SecretKind, namespace, this.name);
    }
    const own = this.lastWrite;
    if (own === undefined) return cached.secret;
    const seen = cached.secret?.metadata?.resourceVersion === own.secret.metadata?.resourceVersion;
    if (seen || this.ctx.now() - own.at > OWN_WRITE_STANDS_MS) {
      this.lastWrite = undefined;
      return cached.secret;
    }
    return own.secret;
  }

  private wrote(secret: V1Secret): void {
    this.lastWrite = { secret, at: this.ctx.now() };
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
      this.wrote(await this.ctx.client.mergePatch<V1Secret>(SecretKind, namespace, this.name, { data }));
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.wrote(await this.create(namespace, data, log));
    }
    log.debug('Wrote the listener config into the shared listener’s Secret', {
      secret: `${namespace}/${this.name}`,
      key: sharedConfigKey(listener),
    });
    return integrityHash(json);
  }

  /** The Secret, on the first config written (another listener's reconcile may have made it meanwhile). */
  private async create(namespace: string, data: Record<string, string>, log: Logger): Promise<V1Secret> {
    try {
      const created = await this.ctx.client.create<V1Secret>(SecretKind, {
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
      return created;
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      return this.ctx.client.mergePatch<V1Secret>(SecretKind, namespace, this.name, { data });
    }
  }

  async remove(listener: AutoscalingListener): Promise<void> {
    try {
      this.wrote(
        await this.ctx.client.mergePatch<V1Secret>(
          SecretKind,
          listener.metadata?.namespace ?? '',
          this.name,
          {
            data: { [sharedConfigKey(listener)]: null },
          },
        ),
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}
