import type { V1Secret } from '@kubernetes/client-node';
import { runnerProxySecretName } from '@aro/api';
import { SecretKind, isNotFound, deleteIgnoringNotFound } from '@aro/kube';
import { configHolderOfRunnerSet } from '@aro/secrets';
import { isDeepStrictEqual } from 'node:util';
import { buildRunnerProxySecret, proxySecretData } from './runner-set-resources';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';

export class RunnerProxySecret {
  constructor(private readonly ctx: Pick<RunnerSetContext, 'client' | 'resolver'>) {}

  /**
   * The Secret the runner pods read their proxy variables from, kept equal to the set's proxy with
   * credentials resolved, on every pass of a set that names a proxy.
   *
   * A set without a proxy can only have a leftover Secret right after its spec changed (the proxy was
   * removed), so only then (`specChanged`) is the Secret looked up to be deleted: reading it on every
   * pass cost a 404 per pass of every set without a proxy, over half of the controller's reads. The
   * rollout stores the new spec hash only after this ran, so a crash in between repeats the lookup.
   */
  async reconcile(
    { obj: set, signal, log }: Pick<RunnerSetPass, 'obj' | 'signal' | 'log'>,
    { specChanged }: { specChanged: boolean },
  ): Promise<void> {
    const namespace = set.metadata?.namespace ?? '';
    const name = runnerProxySecretName(set.metadata?.name ?? '', namespace);
    const proxy = set.spec.ephemeralRunnerSpec?.proxy;
    if (!proxy && !specChanged) return;
    let existing: V1Secret | undefined;
    try {
      existing = await this.ctx.client.get<V1Secret>(SecretKind, namespace, name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    if (!proxy) {
      if (existing) await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, name);
      return;
    }
    const settings = await this.ctx.resolver.getProxySettings(configHolderOfRunnerSet(set), signal);
    const data = proxySecretData(settings);
    const desired = buildRunnerProxySecret(set, data);
    if (!existing) {
      await this.ctx.client.create(SecretKind, desired);
      log.info('Created the runner proxy secret', { secret: name });
      return;
    }
    const current = Object.fromEntries(
      Object.entries(existing.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    if (!isDeepStrictEqual(current, data)) {
      await this.ctx.client.replace(SecretKind, {
        ...desired,
        metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion },
      });
      log.info('Updated the runner proxy secret', { secret: name });
    }
  }
}
