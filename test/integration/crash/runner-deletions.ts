import { Watch } from '@kubernetes/client-node';
import type { EphemeralRunner } from '@aro/api';
import { testKubeConfig } from '../../harness';

/**
 * The EphemeralRunners of a namespace seen with a deletionTimestamp, from a watch: every write the
 * apiserver made reaches it. A finished runner is marked, unregistered and released in a few
 * milliseconds, which a poll of LISTs on a loaded machine misses (CI did, twice in a row, and then
 * waited for a deletion that had already happened); the watch sees the marking write itself.
 */
export class RunnerDeletions {
  private readonly seen: string[] = [];
  private abort: (() => void) | undefined;

  private constructor() {}

  static async watch(namespace: string): Promise<RunnerDeletions> {
    const deletions = new RunnerDeletions();
    const request = await new Watch(testKubeConfig()).watch(
      `/apis/actions.github.com/v1alpha1/namespaces/${namespace}/ephemeralrunners`,
      {},
      (_type: string, runner: EphemeralRunner) => {
        const name = runner.metadata?.name;
        if (name && runner.metadata?.deletionTimestamp && !deletions.seen.includes(name)) {
          deletions.seen.push(name);
        }
      },
      () => undefined,
    );
    deletions.abort = () => request.abort();
    return deletions;
  }

  /** Every runner seen being deleted so far. */
  names(): ReadonlySet<string> {
    return new Set(this.seen);
  }

  /** The first runner seen being deleted that `before` does not hold. */
  next(before: ReadonlySet<string>): string | undefined {
    return this.seen.find((name) => !before.has(name));
  }

  stop(): void {
    this.abort?.();
  }
}
