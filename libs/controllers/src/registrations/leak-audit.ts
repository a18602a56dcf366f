import { isDeepStrictEqual } from 'node:util';
import { Annotations, AutoscalingRunnerSet, AutoscalingRunnerSetKind, type OrphanSweepAudit } from '@aro/api';
import { type KubeClient, isNotFound } from '@aro/kube';
import type { Gauge, Registry } from 'prom-client';
import { type Logger, getOrCreateGauge, metricsRegistry } from '@aro/observability';

/** What one sweep pass saw on one scale set, from the namespaces that registered runners on it. */
export interface ScaleSetSweepResult {
  runnerScaleSetId: number;
  namespaces: string[];
  registrations: number;
  runners: number;
  orphans: number;
  /** Queued for removal in this pass. */
  removed: number;
}

/**
 * An idle scale set's audit is refreshed this often although nothing changed, so that `lastPassTime`
 * tells a reader the sweep still runs, at one write an hour.
 */
export const LEAK_AUDIT_REFRESH_MS = 60 * 60_000;

export interface LeakAuditOptions {
  client: KubeClient;
  logger: Logger;
  now?: () => number;
  registry?: Registry;
}

type AuditGauge = Gauge<'namespace' | 'name'>;

/**
 * Writes the sweep's findings into each AutoscalingRunnerSet's `status.orphanSweep` (the leak audit
 * that `kubectl describe` shows). A scale set's runners are counted from the same uncached list the
 * sweep judged by, so the audit says what the sweep decided on.
 *
 * Cost: one list of AutoscalingRunnerSets per pass, and at most one status patch per set per pass, only
 * when a count changed or the recorded pass is older than {@link LEAK_AUDIT_REFRESH_MS}. A merge patch
 * of `orphanSweep` alone, so it never races the AutoscalingRunnerSet reconciler's own status fields.
 */
export class LeakAudit {
  private readonly now: () => number;
  private readonly gauges: Record<'registrations' | 'runners' | 'orphans', AuditGauge>;
  /** The sets the gauges carry a series for, so a set gone from the pass loses its series. */
  private published = new Set<string>();

  constructor(private readonly opts: LeakAuditOptions) {
    this.now = opts.now ?? Date.now;
    const registry = opts.registry ?? metricsRegistry();
    const gauge = (name: string, help: string): AuditGauge =>
      getOrCreateGauge(registry, { name, help, labelNames: ['namespace', 'name'] });
    this.gauges = {
      registrations: gauge(
        'aro_orphan_sweep_registrations',
        "ARO: runner registrations the Actions service listed for the AutoscalingRunnerSet's scale set at the last sweep pass.",
      ),
      runners: gauge(
        'aro_orphan_sweep_runners',
        'ARO: EphemeralRunners holding a registration on the scale set at the last sweep pass.',
      ),
      orphans: gauge(
        'aro_orphan_sweep_orphans',
        'ARO: registrations without an EphemeralRunner at the last sweep pass (in their grace or queued for removal).',
      ),
    };
  }

  /**
   * Records the pass's results; returns how many AutoscalingRunnerSets were written. `complete` is
   * false for a pass over some scale sets only (first audits): the others keep their gauges.
   */
  async record(results: ScaleSetSweepResult[], complete = true): Promise<number> {
    const byKey = new Map<string, ScaleSetSweepResult>();
    for (const result of results) {
      for (const namespace of result.namespaces) byKey.set(`${namespace}|${result.runnerScaleSetId}`, result);
    }
    const namespaces = new Set(results.flatMap((r) => r.namespaces));
    const sets: AutoscalingRunnerSet[] = [];
    // One list per namespace the results name (usually one), not one get per set.
    for (const namespace of namespaces) {
      sets.push(
        ...(await this.opts.client.list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, { namespace })),
      );
    }
    let written = 0;
    const published = new Set<string>(complete ? [] : this.published);
    for (const ars of sets) {
      const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
      const result = byKey.get(`${ars.metadata?.namespace}|${id}`);
      if (!result || !(id > 0)) continue;
      const labels = { namespace: ars.metadata?.namespace ?? '', name: ars.metadata?.name ?? '' };
      this.gauges.registrations.set(labels, result.registrations);
      this.gauges.runners.set(labels, result.runners);
      this.gauges.orphans.set(labels, result.orphans);
      published.add(JSON.stringify(labels));
      if (await this.write(ars, result)) written++;
    }
    for (const key of this.published) {
      if (published.has(key)) continue;
      const labels = JSON.parse(key) as { namespace: string; name: string };
      for (const g of Object.values(this.gauges)) g.remove(labels);
    }
    this.published = published;
    return written;
  }

  private async write(ars: AutoscalingRunnerSet, result: ScaleSetSweepResult): Promise<boolean> {
    const previous = ars.status?.orphanSweep;
    const counts: Omit<OrphanSweepAudit, 'lastPassTime'> = {
      registrations: result.registrations,
      runners: result.runners,
      orphans: result.orphans,
      orphansRemoved: (previous?.orphansRemoved ?? 0) + result.removed,
    };
    const { lastPassTime, ...previousCounts } = previous ?? {};
    const recordedAt = lastPassTime ? Date.parse(lastPassTime) : NaN;
    const fresh = this.now() - recordedAt < LEAK_AUDIT_REFRESH_MS;
    if (fresh && isDeepStrictEqual(previousCounts, counts)) return false;
    const audit: OrphanSweepAudit = { lastPassTime: new Date(this.now()).toISOString(), ...counts };
    try {
      await this.opts.client.mergePatchStatus(
        AutoscalingRunnerSetKind,
        ars.metadata?.namespace ?? '',
        ars.metadata?.name ?? '',
        { status: { orphanSweep: audit } },
      );
    } catch (err) {
      if (isNotFound(err)) return false;
      // The audit is a report, not a guarantee: a failed write is logged and tried again next pass.
      this.opts.logger.warn('Could not write the leak audit into the AutoscalingRunnerSet status', {
        namespace: ars.metadata?.namespace,
        name: ars.metadata?.name,
        err: err instanceof Error ? err.message : String(err),
      });
      return false;
    }
    if (result.orphans > 0 || result.removed > 0) {
      this.opts.logger.info('Leak audit: registrations without an EphemeralRunner on the scale set', {
        namespace: ars.metadata?.namespace,
        name: ars.metadata?.name,
        ...audit,
      });
    }
    return true;
  }
}
