import { createHash } from 'node:crypto';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { EphemeralRunner, EphemeralRunnerSpec } from '@aro/api';
import { ConfigMapKind, KubeClient, isAlreadyExists, isNotFound } from '@aro/kube';
import type { ActionsServiceClient } from '@aro/actions';
import type { Logger } from '@aro/observability';
import type { ActionsClientProvider } from './unregistration-queue';

/** The ConfigMap, in the controller's own namespace, that lists the scale sets it registered runners on. */
export const SCALE_SET_LEDGER_NAME = 'aro-runner-scale-sets';

/**
 * One scale set this controller registered runners on, from one namespace: what the orphan sweep
 * needs to reach the scale set's registrations once no object in the cluster names it any more.
 */
export interface ScaleSetLedgerEntry {
  namespace: string;
  githubConfigUrl: string;
  githubConfigSecret: string;
  runnerScaleSetId: number;
  proxy?: EphemeralRunnerSpec['proxy'];
  githubServerTLS?: EphemeralRunnerSpec['githubServerTLS'];
  vaultConfig?: EphemeralRunnerSpec['vaultConfig'];
}

export interface ScaleSetLedgerOptions {
  client: KubeClient;
  /** The controller's own namespace, where the ConfigMap lives. */
  namespace: string;
  logger: Logger;
}

function entryOf(runner: EphemeralRunner): ScaleSetLedgerEntry | undefined {
  const spec = runner.spec as EphemeralRunnerSpec | undefined;
  const namespace = runner.metadata?.namespace;
  if (!spec || !namespace || !(spec.runnerScaleSetId > 0) || !spec.githubConfigUrl) return undefined;
  return {
    namespace,
    githubConfigUrl: spec.githubConfigUrl,
    githubConfigSecret: spec.githubConfigSecret,
    runnerScaleSetId: spec.runnerScaleSetId,
    proxy: spec.proxy,
    githubServerTLS: spec.githubServerTLS,
    vaultConfig: spec.vaultConfig,
  };
}

/** A ConfigMap data key: short, valid, and the same for the same scale set and namespace. */
function keyOf(entry: ScaleSetLedgerEntry): string {
  const id = JSON.stringify([entry.githubConfigUrl, entry.runnerScaleSetId, entry.namespace]);
  return `scale-set-${createHash('sha256').update(id).digest('hex').slice(0, 24)}`;
}

/**
 * The scale sets this controller has registered runners on, kept where a crash cannot lose them.
 *
 * The orphan sweep used to learn scale sets from the EphemeralRunners and EphemeralRunnerSets that
 * exist, so a registration whose runner and set were both gone (a removal queued in memory when the
 * process was killed) was on a scale set nobody named, and stayed forever. It is also what the sweep
 * may touch: only scale sets this controller registered runners on, never one it merely sees in the
 * cluster (an upstream ARC being migrated from, another team's controller).
 *
 * Written before a runner's first registration call, so a registration can never exist on a scale
 * set the ledger does not list. One ConfigMap data key per scale set and namespace, added with a merge
 * patch: one write per new scale set in a namespace, none per runner. Secrets are never stored, only
 * the name of the one that holds the credentials.
 */
export class ScaleSetLedger {
  private readonly known = new Set<string>();
  private loaded: Promise<void> | undefined;
  private readonly rememberedListeners: Array<(entry: ScaleSetLedgerEntry) => void> = [];

  constructor(private readonly opts: ScaleSetLedgerOptions) {}

  /** Records the runner's scale set, once per scale set and namespace; a no-op for a runner without one. */
  async remember(runner: EphemeralRunner, signal?: AbortSignal): Promise<void> {
    const entry = entryOf(runner);
    if (!entry) return;
    const key = keyOf(entry);
    if (this.known.has(key)) return;
    this.loaded ??= this.entries().then(
      (entries) => entries.forEach((e) => this.known.add(keyOf(e))),
      (err: unknown) => {
        this.loaded = undefined;
        throw err;
      },
    );
    await this.loaded;
    signal?.throwIfAborted();
    if (this.known.has(key)) return;
    await this.write(key, entry);
    this.known.add(key);
    this.opts.logger.info('Remembered a scale set this controller registers runners on', {
      configMap: `${this.opts.namespace}/${SCALE_SET_LEDGER_NAME}`,
      runnerNamespace: entry.namespace,
      runnerScaleSetId: entry.runnerScaleSetId,
    });
    for (const listener of this.rememberedListeners) listener(entry);
  }

  /** Calls `listener` with each entry this process adds to the ledger (a scale set new in a namespace). */
  onRemembered(listener: (entry: ScaleSetLedgerEntry) => void): void {
    this.rememberedListeners.push(listener);
  }

  /** Every scale set remembered, read from the API server. */
  async entries(): Promise<ScaleSetLedgerEntry[]> {
    return (await this.read()).map(([, entry]) => entry);
  }

  /**
   * Drops the scale set from the ledger, for every namespace that registered runners on it in
   * `namespace`: called once the scale set is deleted from the Actions service, which takes its
   * registrations with it. Without this the sweep would go on listing a scale set that no longer
   * exists, with credentials the uninstalled chart took away (a "forbidden" warning every pass, and a
   * pass never complete). One merge patch; none when the ledger does not list it.
   */
  async forget(namespace: string, runnerScaleSetId: number, signal?: AbortSignal): Promise<void> {
    const keys = (await this.read())
      .filter(([, e]) => e.namespace === namespace && e.runnerScaleSetId === runnerScaleSetId)
      .map(([key]) => key);
    signal?.throwIfAborted();
    if (keys.length === 0) return;
    const data = Object.fromEntries(keys.map((key) => [key, null]));
    try {
      await this.opts.client.mergePatch(ConfigMapKind, this.opts.namespace, SCALE_SET_LEDGER_NAME, { data });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    for (const key of keys) this.known.delete(key);
    this.opts.logger.info('Forgot a scale set deleted from the Actions service', {
      configMap: `${this.opts.namespace}/${SCALE_SET_LEDGER_NAME}`,
      runnerNamespace: namespace,
      runnerScaleSetId,
    });
  }

  /** The ledger's readable entries with their ConfigMap keys. */
  private async read(): Promise<Array<[string, ScaleSetLedgerEntry]>> {
    let configMap: V1ConfigMap;
    try {
      configMap = await this.opts.client.get<V1ConfigMap>(
        ConfigMapKind,
        this.opts.namespace,
        SCALE_SET_LEDGER_NAME,
      );
    } catch (err) {
      if (isNotFound(err)) return [];
      throw err;
    }
    const entries: Array<[string, ScaleSetLedgerEntry]> = [];
    for (const [key, value] of Object.entries(configMap.data ?? {})) {
      try {
        const entry = JSON.parse(value) as ScaleSetLedgerEntry;
        if (typeof entry.runnerScaleSetId === 'number' && typeof entry.namespace === 'string')
          entries.push([key, entry]);
      } catch {
        this.opts.logger.warn('Ignoring an unreadable scale set ledger entry', {
          configMap: `${this.opts.namespace}/${SCALE_SET_LEDGER_NAME}`,
          key,
        });
      }
    }
    return entries;
  }

  private async write(key: string, entry: ScaleSetLedgerEntry): Promise<void> {
    const { client, namespace } = this.opts;
    const data = { [key]: JSON.stringify(entry) };
    try {
      await client.mergePatch(ConfigMapKind, namespace, SCALE_SET_LEDGER_NAME, { data });
      return;
    } catch (err) {
      if (!isNotFound(err))
        throw new Error(
          `failed to remember scale set ${entry.runnerScaleSetId} in ${namespace}/${SCALE_SET_LEDGER_NAME}: ${String(err instanceof Error ? err.message : err)}`,
          { cause: err },
        );
    }
    try {
      await client.create<V1ConfigMap>(ConfigMapKind, {
        metadata: {
          name: SCALE_SET_LEDGER_NAME,
          namespace,
          labels: { 'app.kubernetes.io/managed-by': 'aro' },
        },
        data,
      });
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      await client.mergePatch(ConfigMapKind, namespace, SCALE_SET_LEDGER_NAME, { data });
    }
  }
}

/**
 * The reconciler's Actions clients, each handed out only once its runner's scale set is in the
 * ledger: every registration starts with asking for a client, so none can be made on a scale set the
 * sweep would not know after a crash.
 */
export function rememberingScaleSets(
  actions: ActionsClientProvider,
  ledger: ScaleSetLedger,
): ActionsClientProvider {
  return {
    async getActionsClient(runner: EphemeralRunner, signal?: AbortSignal): Promise<ActionsServiceClient> {
      await ledger.remember(runner, signal);
      return actions.getActionsClient(runner, signal);
    },
  };
}

/** The EphemeralRunner-shaped holder the queue and the Actions client provider take, for one entry. */
export function holderOf(entry: ScaleSetLedgerEntry, name: string): EphemeralRunner {
  return {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'EphemeralRunner',
    metadata: { namespace: entry.namespace, name },
    spec: {
      githubConfigUrl: entry.githubConfigUrl,
      githubConfigSecret: entry.githubConfigSecret,
      runnerScaleSetId: entry.runnerScaleSetId,
      proxy: entry.proxy,
      githubServerTLS: entry.githubServerTLS,
      vaultConfig: entry.vaultConfig,
    },
  } as EphemeralRunner;
}
