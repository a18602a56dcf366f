import type { V1Secret } from '@kubernetes/client-node';
import { Informer, type KubeClient, type Runnable, SecretKind } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { Registry } from 'prom-client';

/** What the cache knows of the shared configs Secret: nothing yet, or the Secret (or its absence). */
export type CachedSharedConfig = { known: false } | { known: true; secret: V1Secret | undefined };

/**
 * Shared listener mode: the one Secret of every listener's config, watched by name.
 *
 * The shared path passes over each listener every `sharedStatusIntervalMs` (10 s) and checks that its
 * key of this Secret is still what it wrote. Read live, that was one GET per listener per pass, each
 * answer carrying every listener's config: at 20 scale sets about 1.3 reads per job, most of the reads
 * shared mode made beyond the per-pod mode. Watched, a pass reads nothing, and a key someone removed or
 * changed is still seen within a pass.
 *
 * Its own informer, not the manager's cache: that one watches a kind whole, and caching every Secret
 * of the watched namespaces would hold the runners' JIT configs and the GitHub credentials in memory and
 * need a `list` on all of them. This one lists and watches one object by `metadata.name`, which a Role
 * can grant by `resourceNames` alone. Until it has listed (or while its list is refused, as under an
 * older Role without that rule) the store reads the Secret live, as before: the watch only saves reads.
 * Started with leadership, as the listener controller is: only the leader reads it.
 */
export class SharedConfigSecretCache implements Runnable {
  readonly name = 'shared-listener-config-cache';
  readonly needLeaderElection = true;
  private readonly informer: Informer<V1Secret>;

  constructor(
    client: KubeClient,
    readonly namespace: string,
    readonly secretName: string,
    opts: { logger?: Logger; registry?: Registry } = {},
  ) {
    this.informer = new Informer<V1Secret>(client, SecretKind, {
      namespace,
      fieldSelector: `metadata.name=${secretName}`,
      logger: opts.logger,
      registry: opts.registry,
    });
  }

  async start(stop: AbortSignal): Promise<void> {
    await this.informer.start();
    if (!stop.aborted)
      await new Promise((resolve) => stop.addEventListener('abort', resolve, { once: true }));
    await this.informer.stop();
  }

  /** The Secret as the watch last delivered it, once listed; `known: false` before (read it live then). */
  read(namespace: string): CachedSharedConfig {
    if (namespace !== this.namespace || !this.informer.hasSynced()) return { known: false };
    return { known: true, secret: this.informer.get(namespace, this.secretName) };
  }
}
