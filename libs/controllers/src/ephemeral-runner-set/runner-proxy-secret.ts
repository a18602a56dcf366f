import type { V1Secret } from '@kubernetes/client-node';
import { legacyRunnerProxySecretName, runnerProxySecretName } from '@aro/api';
import { SecretKind, isNotFound, deleteIgnoringNotFound } from '@aro/kube';
import { configHolderOfRunnerSet } from '@aro/secrets';
import { isDeepStrictEqual } from 'node:util';
import { buildRunnerProxySecret, proxySecretData } from './runner-set-resources';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';

export class RunnerProxySecret {
  /**
   * The sets whose Secret under the earlier ARO name is known gone (deleted or never there), so that
   * each set costs that DELETE once per process, not once per pass. One short key per set.
   */
  private readonly legacyGone = new Set<string>();

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
    pass: Pick<RunnerSetPass, 'obj' | 'signal' | 'log' | 'key' | 'states'>,
    { specChanged }: { specChanged: boolean },
  ): Promise<void> {
    const { obj: set, signal, log } = pass;
    const namespace = set.metadata?.namespace ?? '';
    const name = runnerProxySecretName(set.metadata?.name ?? '', namespace);
    const proxy = set.spec.ephemeralRunnerSpec?.proxy;
    if (!proxy && !specChanged) return;
    await this.retireLegacyName(pass);
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

  /**
   * Earlier ARO releases named the Secret differently ({@link legacyRunnerProxySecretName}). A runner
   * created then keeps that name in `spec.proxySecretRef`, and its pod (or the pod it is recreated
   * with) reads its variables from it, so the old Secret stays while any runner of the set points at
   * it, and is deleted on the first pass after the last one went. New runners use the new name.
   */
  private async retireLegacyName({
    obj: set,
    key,
    states,
    log,
  }: Pick<RunnerSetPass, 'obj' | 'key' | 'states' | 'log'>): Promise<void> {
    if (this.legacyGone.has(key)) return;
    const namespace = set.metadata?.namespace ?? '';
    const legacy = legacyRunnerProxySecretName(set.metadata?.name ?? '', namespace);
    const runners = [
      ...states.pending,
      ...states.running,
      ...states.succeeded,
      ...states.failed,
      ...states.outdated,
      ...states.deleting,
    ];
    const referring = runners.filter((r) => r.spec.proxySecretRef === legacy).length;
    if (referring > 0) {
      log.debug('Keeping the runner proxy secret under its earlier name for the runners using it', {
        secret: legacy,
        runners: referring,
      });
      return;
    }
    if (await deleteIgnoringNotFound(this.ctx.client, SecretKind, namespace, legacy)) {
      log.info('Deleted the runner proxy secret under its earlier name: no runner uses it', {
        secret: legacy,
      });
    }
    this.legacyGone.add(key);
  }
}
