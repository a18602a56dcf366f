import type { V1Pod } from '@kubernetes/client-node';
import { AutoscalingRunnerSet, AutoscalingRunnerSetKind, Labels } from '@aro/api';
import { PodKind } from '@aro/kube';
import type { FaultWindowKind } from '../../apps/simulator/src';
import type { ControlPlaneMemberName } from '../harness/control-plane';
import { RUNNER_NAMESPACE } from '../sandbox/charts';
import { killListener } from '../sandbox/chaos-kills';
import type { SandboxParts } from '../sandbox/sandbox';
import { describeFault, type PlannedFault } from './schedule';

/** What one fault did, for the run's line and for the invariants. */
export interface InjectedFault {
  fault: PlannedFault;
  /** What was hit (`aro-controller-1`, a pod's name, a scale set id), or why nothing was. */
  outcome: string;
  /** Whether it found something to hit (no standby to kill, no runner busy: a miss). */
  hit: boolean;
  /**
   * Jobs the fault broke on purpose, which the invariants do not hold to "succeeded once": the job of
   * the runner pod deleted mid-job (its runner is killed, the job fails), the jobs running when the
   * scale set was deleted on the service (GitHub cancels them). Their pods may go while they run.
   */
  brokenJobs: string[];
}

/** Injects `fault` into the running product; never throws (a fault that cannot be injected is a miss). */
export async function inject(parts: SandboxParts, fault: PlannedFault): Promise<InjectedFault> {
  const done = (hit: boolean, outcome: string, brokenJobs: string[] = []): InjectedFault => ({
    fault,
    hit,
    outcome,
    brokenJobs,
  });
  try {
    switch (fault.kind) {
      case 'kill-leader': {
        const victim = await parts.controllers.killLeader();
        return victim ? done(true, victim) : done(false, 'no leader');
      }
      case 'kill-standby': {
        const victim = await parts.controllers.killStandby();
        return victim ? done(true, victim) : done(false, 'no standby running');
      }
      case 'kill-listener': {
        // Shared mode: the replica holding the scale set's session (sandbox/chaos-kills.ts).
        const victim = await killListener(parts);
        if (!victim)
          return done(false, parts.sharedListeners ? 'no replica holds the session' : 'no listener running');
        return done(true, victim.shared ? `shared listener replica ${victim.name}` : victim.name);
      }
      case 'server-errors':
      case 'throttled':
      case 'slow':
      case 'reset': {
        const window = parts.sim.openFaultWindow({
          kind: fault.kind as FaultWindowKind,
          seconds: fault.seconds,
        });
        return done(true, `window ${window.id} until ${window.closesAt}`);
      }
      case 'freeze-apiserver':
        return done(true, freezeApiserver(parts, fault.seconds));
      case 'restart-apiserver':
        return restart(parts, 'kube-apiserver', fault, done);
      case 'restart-etcd':
        return restart(parts, 'etcd', fault, done);
      case 'delete-runner-pod':
        return await deleteBusyRunnerPod(parts, fault.pick, done);
      case 'delete-scale-set':
        return deleteScaleSetOnService(parts, done);
      case 'edit-template':
        return await editTemplate(parts, fault);
    }
  } catch (err) {
    return done(false, `failed: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * SIGSTOP of kube-apiserver for `seconds`, then SIGCONT: every client's calls and watches hang (no
 * connection is refused or reset, unlike a restart), the leader cannot renew its Lease. The resume is
 * a timer of its own, so nothing the run awaits can keep the apiserver stopped.
 */
function freezeApiserver(parts: SandboxParts, seconds: number): string {
  const pid = parts.plane.info.pids.kubeApiserver;
  process.kill(pid, 'SIGSTOP');
  setTimeout(() => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already: the run is being torn down.
    }
  }, seconds * 1_000);
  return `kube-apiserver pid ${pid} stopped for ${seconds} s`;
}

/**
 * Ends kube-apiserver or etcd (SIGKILL: a crash, or SIGTERM: its graceful shutdown, SIGKILL after the
 * harness's stop timeout; drawn from the fault's pick) and starts it again `seconds` later on the same
 * data, ports and certificates, as a kubelet restarts a static pod: every client's connections break,
 * its watches end, and it must find the same address serving again. The kill and the start run in the
 * background, like the freeze's resume, so that the run goes on looking (and restarting controllers
 * that exit) while the process is down; a start that fails shows in the run's events, and then in its
 * invariants (nothing finishes without the apiserver). The uninstall waits for the start.
 */
function restart(
  parts: SandboxParts,
  member: ControlPlaneMemberName,
  fault: PlannedFault,
  done: (hit: boolean, outcome: string) => InjectedFault,
): InjectedFault {
  // One outage of a member at a time: a second kill would hit the process being started.
  if (parts.plane.restarting(member)) return done(false, `${member} is being restarted already`);
  const signal = fault.pick < 0.5 ? 'SIGKILL' : 'SIGTERM';
  const pid = member === 'etcd' ? parts.plane.info.pids.etcd : parts.plane.info.pids.kubeApiserver;
  const began = Date.now();
  parts.plane.restart(member, { signal, downtimeMs: fault.seconds * 1_000 }).then(
    ({ goneAfterMs, pid: newPid }) =>
      parts.event(
        `chaos: ${member} serving again as pid ${newPid}, ${((Date.now() - began) / 1000).toFixed(1)} s ` +
          `after the ${signal} (gone after ${(goneAfterMs / 1000).toFixed(1)} s)`,
      ),
    (err: Error) => parts.event(`chaos: ${member} did not come back: ${err.message}`),
  );
  return done(true, `${member} pid ${pid} sent ${signal}, started again ${fault.seconds} s after it is gone`);
}

/**
 * Deletes the pod of a runner that is running a job (a person's `kubectl delete pod`, a node drained
 * without the eviction API). The runner in it is killed; its job fails, which is what GitHub shows.
 */
async function deleteBusyRunnerPod(
  parts: SandboxParts,
  pick: number,
  done: (hit: boolean, outcome: string, broken?: string[]) => InjectedFault,
): Promise<InjectedFault> {
  const pods = await parts.kube.list<V1Pod>(PodKind, {
    namespace: RUNNER_NAMESPACE,
    labelSelector: `${Labels.ephemeralRunnerPod}=True`,
  });
  const busy = pods
    .filter((p) => !p.metadata?.deletionTimestamp && p.status?.phase === 'Running')
    .map((p) => ({ pod: p.metadata?.name ?? '', jobId: parts.sim.runner(p.metadata?.name ?? '')?.jobId }))
    .filter(
      (b): b is { pod: string; jobId: string } => !!b.jobId && parts.sim.job(b.jobId)?.state === 'running',
    )
    .sort((a, b) => a.pod.localeCompare(b.pod));
  if (busy.length === 0) return done(false, 'no runner busy with a job');
  const victim = busy[Math.floor(pick * busy.length)];
  await parts.kube.delete(PodKind, RUNNER_NAMESPACE, victim.pod);
  return done(true, `${victim.pod} (job ${victim.jobId})`, [victim.jobId]);
}

/** Deletes the scale set on the service, as GitHub does to one it considers offline. */
function deleteScaleSetOnService(
  parts: SandboxParts,
  done: (hit: boolean, outcome: string, broken?: string[]) => InjectedFault,
): InjectedFault {
  const scaleSet = parts.sim.scaleSets().find((s) => s.name === parts.release);
  if (!scaleSet) return done(false, `no scale set ${parts.release} on the service`);
  const running = parts.sim
    .jobs({ scaleSetId: scaleSet.id, state: 'running' })
    .map((j) => j.jobId)
    .filter((id) => parts.workload.jobIds.includes(id));
  parts.sim.deleteScaleSet(scaleSet.id);
  return done(true, `scale set ${scaleSet.id} (${running.length} running jobs canceled)`, running);
}

/**
 * Edits the AutoscalingRunnerSet's runner template (an annotation on the pod template, as a chart
 * upgrade that changes the image would): the controller rolls a new EphemeralRunnerSet and a new
 * listener while the old runners finish their jobs.
 */
async function editTemplate(parts: SandboxParts, fault: PlannedFault): Promise<InjectedFault> {
  const ars = await parts.kube.get<AutoscalingRunnerSet>(
    AutoscalingRunnerSetKind,
    RUNNER_NAMESPACE,
    parts.release,
  );
  const template = ars.spec.template ?? {};
  const annotations = { ...template.metadata?.annotations, 'chaos.aro.dev/edit': describeFault(fault) };
  await parts.kube.replace<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
    ...ars,
    spec: { ...ars.spec, template: { ...template, metadata: { ...template.metadata, annotations } } },
  });
  return { fault, hit: true, outcome: 'runner template annotated', brokenJobs: [] };
}
