import type { Gauge, Registry } from 'prom-client';
import { EphemeralRunner, EphemeralRunnerPhase, Labels } from '@aro/api';
import { parseGitHubConfigUrl } from '@aro/actions';
import { Logger, getOrCreateGauge, metricsRegistry } from '@aro/observability';

const LABELS = ['name', 'namespace', 'repository', 'organization', 'enterprise'] as const;
type PhaseLabel = (typeof LABELS)[number];

/*
 * Upstream publishes the pending, running and failed counts under these names and labels; the
 * succeeded and outdated gauges are ARO's, so that every phase a runner can be in is counted.
 */
const GAUGES: Record<EphemeralRunnerPhase, { name: string; help: string }> = {
  Pending: {
    name: 'gha_controller_pending_ephemeral_runners',
    help: 'Number of ephemeral runners in a pending state.',
  },
  Running: {
    name: 'gha_controller_running_ephemeral_runners',
    help: 'Number of ephemeral runners in a running state.',
  },
  Failed: {
    name: 'gha_controller_failed_ephemeral_runners',
    help: 'Number of ephemeral runners in a failed state.',
  },
  Succeeded: {
    name: 'gha_controller_succeeded_ephemeral_runners',
    help: 'Number of ephemeral runners in a succeeded state, waiting to be deleted.',
  },
  Outdated: {
    name: 'gha_controller_outdated_ephemeral_runners',
    help: 'Number of ephemeral runners whose runner version the service no longer accepts.',
  },
};

/**
 * The phases whose gauges the EphemeralRunnerSet controller publishes for its set, with the same
 * labels. A runner of a set is left out of them here: two writers of one series overwrite each other
 * (the set's `set()` erases this class's increments, and the next increment makes the count wrong).
 * The set's count is the one upstream's dashboards read; runners without a set are counted here.
 */
const PUBLISHED_BY_THE_SET: ReadonlySet<EphemeralRunnerPhase> = new Set<EphemeralRunnerPhase>([
  EphemeralRunnerPhase.Pending,
  EphemeralRunnerPhase.Running,
  EphemeralRunnerPhase.Failed,
]);

function isOwnedByRunnerSet(runner: EphemeralRunner): boolean {
  return (
    runner.metadata?.ownerReferences?.some(
      (ref) => ref.controller === true && ref.kind === 'EphemeralRunnerSet',
    ) ?? false
  );
}

/**
 * Per-phase gauges of EphemeralRunners, kept by remembering the phase each runner was last counted
 * in: a transition moves one runner from one gauge to the other, and a deletion takes it out, so the
 * gauges stay right without ever listing the runners.
 */
export class EphemeralRunnerPhaseMetrics {
  private readonly counted = new Map<
    string,
    { phase: EphemeralRunnerPhase; labels: Record<PhaseLabel, string> }
  >();
  private readonly gauges: Record<EphemeralRunnerPhase, Gauge<PhaseLabel>>;

  constructor(
    private readonly logger: Logger,
    registry: Registry = metricsRegistry(),
  ) {
    const make = (p: EphemeralRunnerPhase) =>
      getOrCreateGauge<PhaseLabel>(registry, { ...GAUGES[p], labelNames: [...LABELS] });
    this.gauges = {
      Pending: make('Pending'),
      Running: make('Running'),
      Failed: make('Failed'),
      Succeeded: make('Succeeded'),
      Outdated: make('Outdated'),
    };
  }

  /** Records that `runner` is now in `phase`; an empty phase (or deletion) stops counting it. */
  publish(runner: EphemeralRunner, reported: EphemeralRunnerPhase | '' | undefined): void {
    const phase =
      reported && PUBLISHED_BY_THE_SET.has(reported) && isOwnedByRunnerSet(runner) ? '' : reported;
    const key = `${runner.metadata?.namespace}/${runner.metadata?.name}`;
    const previous = this.counted.get(key);
    if (previous?.phase === (phase || undefined)) return;
    if (previous) this.gauges[previous.phase].dec(previous.labels);
    if (!phase) {
      this.counted.delete(key);
      return;
    }
    const labels = previous?.labels ?? this.labelsOf(runner);
    if (!labels) {
      this.counted.delete(key);
      return;
    }
    this.gauges[phase].inc(labels);
    this.counted.set(key, { phase, labels });
  }

  private labelsOf(runner: EphemeralRunner): Record<PhaseLabel, string> | undefined {
    try {
      const config = parseGitHubConfigUrl(runner.spec.githubConfigUrl);
      return {
        name: runner.metadata?.labels?.[Labels.scaleSetName] ?? '',
        namespace: runner.metadata?.labels?.[Labels.scaleSetNamespace] ?? '',
        repository: config.repository,
        organization: config.organization,
        enterprise: config.enterprise,
      };
    } catch (err) {
      this.logger.warn('Not counting the runner in the phase metrics: its GitHub config URL is invalid', {
        namespace: runner.metadata?.namespace,
        name: runner.metadata?.name,
        err: err instanceof Error ? err.message : String(err),
      });
      return undefined;
    }
  }
}
