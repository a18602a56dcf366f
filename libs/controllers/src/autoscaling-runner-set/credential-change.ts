import type { V1Secret } from '@kubernetes/client-node';
import type { AutoscalingRunnerSet } from '@aro/api';
import { type KeyedStore, type Result, SecretKind, isNotFound, requeueAfter } from '@aro/kube';
import type { Logger } from '@aro/observability';
import type { ScaleSetContext } from './runner-scale-set-context';

/** How often a failing set looks at its credential Secret for a change while it backs off. */
export const CREDENTIAL_RECHECK_MS = 2_000;

interface HeldBack {
  /** The Secret's resourceVersion when the service refused ('' for a Secret that did not exist). */
  secretVersion: string;
  /** When the backoff lets the service be asked again with unchanged input. */
  notBefore: number;
}

/**
 * A fixed credential takes effect within seconds, while a wrong one costs the service nothing more
 * than the backoff allows.
 *
 * After a failure to reach the scale set, the set is looked at again every CREDENTIAL_RECHECK_MS,
 * but each such pass only reads the credential Secret its spec names (one apiserver GET): unchanged,
 * the pass ends with no call to the service until the backoff is over; changed (fixed, rotated, or
 * created where it was missing), the backoff is reset and the service asked at once.
 *
 * Why not a watch on Secrets: the chart grants the controller no list or watch on Secrets, and with
 * one it would hold every Secret of the cluster in its memory to learn about the few its sets name.
 * A GET of one named Secret while its set is failing costs the apiserver one read every 2 s and
 * nothing while the set is healthy.
 */
export class CredentialChangeWatch {
  private readonly heldBack: KeyedStore<HeldBack>;

  constructor(
    private readonly ctx: Pick<ScaleSetContext, 'client' | 'failures' | 'memory' | 'now'>,
    private readonly recheckMs = CREDENTIAL_RECHECK_MS,
  ) {
    this.heldBack = ctx.memory.slot('credential held back');
  }

  /** The service accepted the set: nothing is held back any more. */
  clear(key: string): void {
    this.heldBack.delete(key);
  }

  /**
   * Before the service is asked: a result to end the pass with (the Secret is unchanged and the
   * backoff not over), or undefined to go on.
   */
  async holdBack(ars: AutoscalingRunnerSet, key: string, log: Logger): Promise<Result | undefined> {
    const held = this.heldBack.get(key);
    if (!held) return undefined;
    const wait = held.notBefore - this.ctx.now();
    if (wait <= 0) return undefined;
    const version = await this.secretVersion(ars);
    if (version === undefined || version === held.secretVersion) {
      return requeueAfter(Math.min(wait, this.recheckMs));
    }
    log.info('The credential Secret changed since the service refused it; asking again now', {
      secret: ars.spec.githubConfigSecret,
    });
    this.heldBack.delete(key);
    this.ctx.failures.forget(key);
    return undefined;
  }

  /** After a failure: remembers the Secret as it is and wakes the set soon enough to see it change. */
  async remember(ars: AutoscalingRunnerSet, key: string, backoff: Result): Promise<Result> {
    const version = await this.secretVersion(ars);
    const waitMs = backoff.requeueAfterMs ?? 0;
    if (version === undefined || waitMs <= this.recheckMs) return backoff;
    this.heldBack.set(key, { secretVersion: version, notBefore: this.ctx.now() + waitMs });
    return requeueAfter(this.recheckMs);
  }

  /** The named Secret's resourceVersion, '' when it does not exist, undefined when it cannot be read. */
  private async secretVersion(ars: AutoscalingRunnerSet): Promise<string | undefined> {
    const name = ars.spec.githubConfigSecret;
    if (!name) return undefined;
    try {
      const secret = await this.ctx.client.get<V1Secret>(SecretKind, ars.metadata?.namespace ?? '', name);
      return secret.metadata?.resourceVersion ?? '';
    } catch (err) {
      if (isNotFound(err)) return '';
      return undefined;
    }
  }
}
