import type { CoreV1Event, KubernetesObject } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  type OrphanSweepAudit,
  hasJob,
} from '@aro/api';
import { EventKind, type InformerCache, type Manager } from '@aro/kube';

/** Warning Events the page lists at most, newest first. */
export const RECENT_WARNINGS = 20;

export interface FleetScaleSet {
  namespace: string;
  name: string;
  runnerScaleSetId?: number;
  minRunners: number;
  maxRunners?: number;
  /** The EphemeralRunnerSet's replicas: what the listener asks for. */
  desiredRunners: number;
  /** EphemeralRunners of the set that exist (not being deleted). */
  actualRunners: number;
  runnersByPhase: Record<string, number>;
  jobsRunning: number;
  /**
   * Assigned jobs no runner runs yet, as far as the cluster can tell: the listener asks for
   * minRunners + assigned jobs (capped at maxRunners), so desired - minRunners - running.
   */
  jobsWaiting: number;
  orphanSweep?: OrphanSweepAudit;
}

export interface FleetWarning {
  namespace: string;
  object: string;
  reason: string;
  message: string;
  count: number;
  lastSeen: string;
}

export interface FleetSnapshot {
  generatedAt: string;
  /** The replica serving the page, and the Lease holder it last observed. */
  replica?: string;
  leader?: string;
  leading: boolean;
  scaleSets: FleetScaleSet[];
  /** The sweep pass most recently recorded on any scale set. */
  lastSweep?: string;
  warnings: FleetWarning[];
}

const uidOf = (o: KubernetesObject) => o.metadata?.uid ?? '';
const controllerUid = (o: KubernetesObject) =>
  o.metadata?.ownerReferences?.find((r) => r.controller)?.uid ?? '';

/**
 * What the fleet page shows, from the informer caches alone: a view costs no API call, however many
 * people keep the page open. The Events informer is the page's own (made when the page is enabled);
 * the other kinds are the controllers' caches.
 */
export async function fleetSnapshot(cache: InformerCache, manager: Manager): Promise<FleetSnapshot> {
  const [sets, runnerSets, runners, events] = await Promise.all([
    cache.list<AutoscalingRunnerSet>(AutoscalingRunnerSetKind),
    cache.list<EphemeralRunnerSet>(EphemeralRunnerSetKind),
    cache.list<EphemeralRunner>(EphemeralRunnerKind),
    cache.list<CoreV1Event & KubernetesObject>(EventKind),
  ]);
  const runnersBySet = new Map<string, EphemeralRunner[]>();
  for (const runner of runners) {
    if (runner.metadata?.deletionTimestamp) continue;
    const key = controllerUid(runner);
    runnersBySet.set(key, [...(runnersBySet.get(key) ?? []), runner]);
  }
  const scaleSets = sets
    .map((ars): FleetScaleSet => {
      const runnerSet = runnerSets.find((ers) => controllerUid(ers) === uidOf(ars));
      const own = runnerSet ? (runnersBySet.get(uidOf(runnerSet)) ?? []) : [];
      const runnersByPhase: Record<string, number> = {};
      for (const r of own) {
        const phase = r.status?.phase || 'Pending';
        runnersByPhase[phase] = (runnersByPhase[phase] ?? 0) + 1;
      }
      const minRunners = ars.spec.minRunners ?? 0;
      const desiredRunners = runnerSet?.spec.replicas ?? 0;
      const jobsRunning = own.filter(hasJob).length;
      const id = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
      return {
        namespace: ars.metadata?.namespace ?? '',
        name: ars.metadata?.name ?? '',
        runnerScaleSetId: id > 0 ? id : undefined,
        minRunners,
        maxRunners: ars.spec.maxRunners,
        desiredRunners,
        actualRunners: own.length,
        runnersByPhase,
        jobsRunning,
        jobsWaiting: Math.max(0, desiredRunners - minRunners - jobsRunning),
        orphanSweep: ars.status?.orphanSweep,
      };
    })
    .sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
  const sweeps = scaleSets.map((s) => s.orphanSweep?.lastPassTime ?? '').filter((t) => t !== '');
  const warnings = events
    .filter((e) => e.type === 'Warning')
    .map((e): FleetWarning => ({
      namespace: e.metadata?.namespace ?? '',
      object: `${e.involvedObject?.kind ?? ''}/${e.involvedObject?.name ?? ''}`,
      reason: e.reason ?? '',
      message: e.message ?? '',
      count: e.count ?? 1,
      lastSeen: new Date(e.lastTimestamp ?? e.eventTime ?? e.metadata?.creationTimestamp ?? 0).toISOString(),
    }))
    .sort((a, b) => b.lastSeen.localeCompare(a.lastSeen))
    .slice(0, RECENT_WARNINGS);
  return {
    generatedAt: new Date().toISOString(),
    replica: manager.identity,
    leader: manager.leader(),
    leading: manager.isLeader(),
    scaleSets,
    lastSweep: sweeps.sort().at(-1),
    warnings,
  };
}
