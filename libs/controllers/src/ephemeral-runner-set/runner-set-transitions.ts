import { Annotations, EphemeralRunnerSetKind, EphemeralRunnerSetPhase, ScaleSetReasons } from '@aro/api';
import { Result, done } from '@aro/kube';
import type { RunnerSetContext, RunnerSetPass } from './runner-set-context';
import type { RunnerRemoval } from './runner-removal';
import type { RunnerSetStatusWriter } from './runner-set-status';
import type { RunnerProxySecret } from './runner-proxy-secret';

/** The set-wide transitions: a new runner spec rolled out, and the rest of an Outdated set. */
export class RunnerSetTransitions {
  constructor(
    private readonly ctx: Pick<RunnerSetContext, 'client' | 'events' | 'failureBackoff'>,
    private readonly removal: RunnerRemoval,
    private readonly proxySecret: RunnerProxySecret,
    private readonly status: RunnerSetStatusWriter,
  ) {}

  /**
   * The runner spec changed: idle runners, built from the old spec, go (registration first), so that
   * the ones the listener asks for next are built from the new one. Runners with a job finish it.
   * The hash is stored once that is done, and an Outdated set gets a fresh start: a new spec is how
   * a person fixes a deprecated runner image.
   */
  async rollOutSpec(pass: RunnerSetPass, hash: string): Promise<Result> {
    const { obj: set, key } = pass;
    pass.log.info('The runner spec changed; replacing idle runners', { integrityHash: hash });
    const { releasedIdle } = await this.removal.releaseAndDeleteAll(pass);
    // A set's first pass (no hash stored yet) has no earlier spec whose proxy Secret could be left over.
    const specChanged = set.metadata?.annotations?.[Annotations.integrityHash] !== undefined;
    await this.proxySecret.reconcile(pass, { specChanged });
    // The idle runners let go for the new spec are owed back at once: the listener counted them as
    // capacity and will not send a new patch just because the template changed (upstream waits for one).
    // A second pass before the cache shows the stored hash finds those runners already deleting and
    // releases none: it must not forget what the first pass owes (creation is capped by replicas).
    const owedBefore = this.ctx.failureBackoff.get(key)?.owed ?? 0;
    this.ctx.failureBackoff.set(key, {
      failuresInARow: 0,
      notBefore: 0,
      owed: Math.max(owedBefore, releasedIdle),
    });
    // Status before the hash: the hash's watch event must find the phase already reset, or the next
    // pass would take the set for Outdated still.
    await this.status.updateStatus(pass, EphemeralRunnerSetPhase.Running, {
      status: 'True',
      reason: 'SpecUpdated',
      message: 'The runner spec changed; new runners use it',
    });
    await this.ctx.client.mergePatch(
      EphemeralRunnerSetKind,
      set.metadata?.namespace ?? '',
      set.metadata?.name ?? '',
      {
        metadata: { annotations: { [Annotations.integrityHash]: hash } },
      },
    );
    return done;
  }

  /**
   * A runner reported that its version is deprecated: every runner of this spec will. The set stops
   * creating runners, lets busy ones finish, removes the rest, and says why in its phase and a
   * condition. It stays so until its runner spec changes (upstream: deleted and recreated by the
   * AutoscalingRunnerSet in a loop, #4600).
   */
  async rest(pass: RunnerSetPass): Promise<Result> {
    const { obj: set } = pass;
    if (set.status?.phase !== EphemeralRunnerSetPhase.Outdated) {
      pass.log.warn('A runner reported a deprecated runner version; the set stops creating runners');
      this.ctx.events?.record(
        set,
        'Warning',
        ScaleSetReasons.outdated,
        'A runner exited with the "version deprecated" code: no new runners are created until the runner image is updated',
      );
    }
    await this.removal.releaseAndDeleteAll(pass);
    await this.status.updateStatus(pass, EphemeralRunnerSetPhase.Outdated, {
      status: 'False',
      reason: ScaleSetReasons.outdated,
      message: 'A runner reported a deprecated runner version; update the runner image in the template',
    });
    return done;
  }
}
