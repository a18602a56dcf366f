import type { V1Secret } from '@kubernetes/client-node';
import { KubeClient, SecretKind, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { LoadedListenerConfig } from '../config';
import { ConfigEntries, type ConfigEntry, type ListenerConfigSource } from './config-source';

/**
 * The configs of a shared listener in one Secret (`LISTENER_CONFIG_SECRET=<namespace>/<name>`), which
 * the AutoscalingListener controller keeps: one key `<listener>.json` per scale set served. Read with a
 * `get` of that Secret by name, the one read the chart grants the shared listener's account; read from
 * the API rather than mounted, so a new scale set is served within a rescan, not the kubelet's sync
 * period (a minute or more). A Secret not there (yet) serves nothing; any other failure keeps what is
 * served (the caller's rule).
 */
export class ConfigSecret implements ListenerConfigSource {
  private readonly entries: ConfigEntries;

  constructor(
    private readonly kube: Pick<KubeClient, 'get'>,
    private readonly namespace: string,
    private readonly name: string,
    logger: Logger,
  ) {
    this.entries = new ConfigEntries(logger);
  }

  get where(): string {
    return `Secret ${this.namespace}/${this.name}`;
  }

  async read(): Promise<Map<string, LoadedListenerConfig>> {
    let secret: V1Secret;
    try {
      secret = await this.kube.get<V1Secret>(SecretKind, this.namespace, this.name);
    } catch (err) {
      if (isNotFound(err)) return new Map();
      throw err;
    }
    const found: ConfigEntry[] = Object.entries(secret.data ?? {})
      .filter(([key]) => key.endsWith('.json'))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => ({
        key: key.slice(0, -'.json'.length),
        source: `${this.where} key ${key}`,
        text: () => Buffer.from(value, 'base64').toString('utf8'),
      }));
    return this.entries.validate(found);
  }
}

/** `<namespace>/<name>` of LISTENER_CONFIG_SECRET; undefined when it is not that shape. */
export function parseSecretRef(value: string): { namespace: string; name: string } | undefined {
  const m = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-.a-z0-9]*[a-z0-9])?)$/.exec(value.trim());
  return m ? { namespace: m[1], name: m[3] } : undefined;
}
