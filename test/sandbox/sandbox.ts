import { createWriteStream, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Namespace, V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  API_VERSION,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { MultiClient } from '@aro/actions';
import { KubeClient, NamespaceKind, PodKind, SecretKind, isNotFound } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../../apps/simulator/src';
import { ControlPlane } from '../harness/control-plane';
import { CRD_PATHS } from '../harness/global-setup';
import { apiserverRequestCounts, requestCountDelta } from '../harness/apiserver-requests';
import { ListenerPodPlayer } from '../harness/listener-pod-player';
import { processExists } from '../harness/processes';
import { RunnerPlayer } from '../harness/runner-player';
import { LISTENER_MAIN, describeSeams, detectCapabilities, scaleSetMode } from './capabilities';
import { freePort } from '../harness/ports';
import { ControllerReplicas, LEASE_NAMESPACE } from './controllers';
import type { SandboxOptions } from './options';
import { ProgressView, jobCounts, runnersByPhase, type Snapshot } from './progress';
import { StandInScaler } from './stand-in-scaler';
import { formatDuration, percentile, table } from './stats';
import { Workload } from './workload';

export const RUNNER_NAMESPACE = 'arc-runners';
export const CREDENTIALS_SECRET = 'github-config';
export const SCALE_SET_NAME = 'sandbox';
export const SIMULATOR_PORT = 8910;

/** What a run ends with: the summary's figures, for the table and for the test that reads them. */
export interface SandboxReport {
  mode: 'scale-set' | 'runner';
  seams: string[];
  wallMs: number;
  jobs: number;
  succeeded: number;
  failed: number;
  unfinished: number;
  queueWaitP50Ms: number;
  queueWaitP95Ms: number;
  runnerLifecycleP50Ms: number;
  runnerLifecycleP95Ms: number;
  runnersSeen: number;
  kubeWrites: number;
  actionsCalls: number;
  registrationsLeft: number;
  podsLeft: number;
  secretsLeft: number;
  processesLeft: number;
  tempFoldersLeft: number;
  chaos: string[];
  aborted: boolean;
  /** Every process the run started (control plane, controllers, listeners), all gone at the end. */
  pids: number[];
  /** Every temporary folder the run made (the control plane's run folder holds the sandbox's). */
  folders: string[];
}

export interface SandboxIo {
  out: NodeJS.WritableStream;
  tty: boolean;
  /** Aborted by Ctrl-C: the run stops where it is, cleans up and still reports. */
  signal: AbortSignal;
}

// Writes that are not the product's: the kubelet player's pod status and binding, and lease renewals,
// which follow the clock rather than the workload.
const NOT_PRODUCT_WRITES = /^(POST|PUT|PATCH|DELETE|APPLY) (pods\/status|pods\/binding|leases)$/;

function kubeWrites(delta: Map<string, number>, standInCreates: number): number {
  let writes = 0;
  for (const [key, n] of delta) {
    if (/^(POST|PUT|PATCH|DELETE|DELETECOLLECTION|APPLY) /.test(key) && !NOT_PRODUCT_WRITES.test(key))
      writes += n;
  }
  return writes - standInCreates;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * `npm run sandbox`: the whole product on this machine, on loopback. Brings up the control plane, the
 * simulator as GitHub, two controller replicas, the scale set (or its stand-in), the kubelet players;
 * queues the workload; shows progress; then drains, checks what is left, stops everything and reports.
 */
export async function runSandbox(options: SandboxOptions, io: SandboxIo): Promise<SandboxReport> {
  const view = new ProgressView(io.out, io.tty);
  const began = Date.now();
  const capabilities = await detectCapabilities();
  const mode = scaleSetMode(capabilities) ? 'scale-set' : 'runner';
  const seams = describeSeams(capabilities);
  view.event(
    `ARO sandbox: ${options.jobs} jobs at ${options.rate}/s, max ${options.maxRunners} runners, ${options.duration} s each`,
  );
  view.event(
    `mode: ${mode === 'scale-set' ? 'scale-set (AutoscalingRunnerSet, listener, runner set: the product)' : 'runner (the sandbox stands in for the listener and the runner set)'}`,
  );
  for (const seam of seams) view.event(`  seam: ${seam}`);

  const chaos: string[] = [];
  const cleanup: Array<() => Promise<void>> = [];
  let plane: ControlPlane | undefined;
  let report: SandboxReport | undefined;
  const pids: number[] = [];
  const folders: string[] = [];
  let last: Snapshot | undefined;
  try {
    plane = await ControlPlane.start({ crdPaths: CRD_PATHS, log: (l) => view.event(`[control-plane] ${l}`) });
    const cp = plane;
    folders.push(cp.info.runDir);
    pids.push(cp.info.pids.etcd, cp.info.pids.kubeApiserver, cp.info.pids.reaper);
    if (cp.info.pids.kubeControllerManager) pids.push(cp.info.pids.kubeControllerManager);
    // pod-lifecycle.ts and users.ts find the control plane through these, as in an integration test.
    // (Put back at the end: a jest worker that runs the sandbox goes on with the shared control plane.)
    const envBefore = {
      kubeconfig: process.env.ARO_TEST_KUBECONFIG,
      controlPlane: process.env.ARO_TEST_CONTROL_PLANE,
    };
    cleanup.push(async () => restoreEnv(envBefore));
    process.env.ARO_TEST_KUBECONFIG = cp.info.kubeconfigPath;
    process.env.ARO_TEST_CONTROL_PLANE = cp.infoPath;
    const workDir = join(cp.info.runDir, 'sandbox');
    mkdirSync(workDir, { recursive: true });
    const kube = new KubeClient(cp.kubeConfig(), { userAgent: 'aro-sandbox' });
    cleanup.push(async () => kube.close());
    for (const name of [LEASE_NAMESPACE, RUNNER_NAMESPACE]) {
      await kube.create<V1Namespace>(NamespaceKind, { metadata: { name } });
    }
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: CREDENTIALS_SECRET, namespace: RUNNER_NAMESPACE },
      stringData: { github_token: DEFAULT_PAT },
    });

    // In-process: the sandbox reads the service's jobs, registrations and counters several times a
    // second for the progress view and plays every runner against it; over HTTP that would be a
    // process more to manage and a JSON round trip per look. The product reaches it over HTTP as ever.
    const simLog = createWriteStream(join(workDir, 'simulator.log'));
    const simOptions = {
      seed: { timing: { autoStartJobs: true } },
      logger: createLogger({ level: 'info', format: 'json', destination: simLog }),
    };
    // The simulator's usual port when it is free, so that examples/manifests (which name
    // http://127.0.0.1:8910/octo) apply as they are against `npm run sandbox -- --keep`.
    const sim: RunningSimulator = await startSimulator({ ...simOptions, port: SIMULATOR_PORT }).catch(() =>
      startSimulator({ ...simOptions, port: 0 }),
    );
    cleanup.push(async () => {
      await sim.stop();
      simLog.end();
    });
    const configUrl = sim.configUrl({ org: 'octo' });
    view.event(`simulator (GitHub + Actions service) at ${sim.url}; config URL ${configUrl}`);

    const controllers = new ControllerReplicas({
      kubeconfigPath: cp.info.kubeconfigPath,
      logDir: workDir,
      pidFile: join(cp.info.runDir, 'pids'),
      kube,
      replicas: 2,
    });
    cleanup.push(() => controllers.stop());
    view.event(
      'starting 2 controller replicas (apps/controller, leader election on arc-systems/aro-controller)',
    );
    await controllers.start();
    view.event(`controllers up: ${controllers.replicas.map((r) => `${r.name} :${r.port}`).join(', ')}`);

    const runnerPlayer = new RunnerPlayer({
      kubeConfig: cp.kubeConfig(),
      namespace: RUNNER_NAMESPACE,
      service: sim,
      jobDurationMs: options.duration * 1_000,
      failShare: options.failShare,
      exit7Share: options.exit7Share,
      jobWaitTimeoutMs: mode === 'runner' ? 20_000 : 120_000,
    }).start();
    cleanup.push(() => runnerPlayer.stop());

    let listenerPlayer: ListenerPodPlayer | undefined;
    let standIn: StandInScaler | undefined;
    let scaleSetLabel = SCALE_SET_NAME;
    if (mode === 'scale-set') {
      listenerPlayer = new ListenerPodPlayer({
        kubeConfig: cp.kubeConfig(),
        kubeconfigPath: cp.info.kubeconfigPath,
        namespace: '', // wherever the AutoscalingListener controller puts them
        listenerMain: LISTENER_MAIN,
        workDir: join(workDir, 'listeners'),
        pidFile: join(cp.info.runDir, 'pids'),
        freePort,
        log: (l) => view.event(`  ${l}`, last),
      }).start();
      const player = listenerPlayer;
      cleanup.push(() => player.stop());
      await kube.create<AutoscalingRunnerSet>(
        AutoscalingRunnerSetKind,
        autoscalingRunnerSet(configUrl, options.maxRunners),
      );
      view.event(
        `applied AutoscalingRunnerSet ${RUNNER_NAMESPACE}/${SCALE_SET_NAME} (maxRunners ${options.maxRunners})`,
      );
    } else {
      const actions = new MultiClient({ retry: { maxRetries: 2 } });
      const client = actions.getClientFor({
        configUrl,
        namespace: RUNNER_NAMESPACE,
        credentials: { kind: 'pat', token: DEFAULT_PAT },
      });
      const set = await client.createRunnerScaleSet({
        name: SCALE_SET_NAME,
        runnerGroupId: 1,
        labels: [{ name: SCALE_SET_NAME }],
      });
      await actions.close();
      scaleSetLabel = SCALE_SET_NAME;
      standIn = new StandInScaler({
        kube,
        sim,
        namespace: RUNNER_NAMESPACE,
        scaleSetId: set.id,
        configUrl,
        secretName: CREDENTIALS_SECRET,
        maxRunners: options.maxRunners,
        log: (l) => view.event(l, last),
      });
      view.event(`scale set "${SCALE_SET_NAME}" (id ${set.id}) created on the service by the stand-in`);
    }

    // Counting starts now: what set-up cost is not the workload's.
    const countsBefore = await apiserverRequestCounts(cp.kubeConfig());
    sim.resetCallCounts();
    const standInScaleSetId = standIn
      ? sim.scaleSets().find((s) => s.name === SCALE_SET_NAME)?.id
      : undefined;
    const workload = new Workload({
      sim,
      jobs: options.jobs,
      rate: options.rate,
      waveSeconds: options.waveSeconds,
      labels: [scaleSetLabel],
      scaleSetId: standInScaleSetId,
    });
    const workloadBegan = Date.now();
    workload.start();
    cleanup.push(async () => workload.stop());

    const created = new Map<string, number>();
    const lifecycles: number[] = [];
    let kubeWriteCount = 0;
    let killedLeaderAt = 0;
    let listenerKilled = false;
    let leaderKilled = false;
    let lastLeader = '';
    const deadline = workloadBegan + options.timeoutSeconds * 1_000;

    const look = async (): Promise<Snapshot> => {
      const runners = await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: RUNNER_NAMESPACE });
      const present = new Set<string>();
      for (const r of runners) {
        const uid = r.metadata?.uid ?? '';
        present.add(uid);
        if (!created.has(uid))
          created.set(uid, Date.parse(String(r.metadata?.creationTimestamp ?? '')) || Date.now());
      }
      for (const [uid, at] of created) {
        if (!present.has(uid) && at > 0) {
          lifecycles.push(Date.now() - at);
          created.set(uid, -1); // measured once
        }
      }
      const counts = await apiserverRequestCounts(cp.kubeConfig());
      kubeWriteCount = kubeWrites(requestCountDelta(countsBefore, counts), standIn?.writes ?? 0);
      const leader = (await controllers.leader())?.split('_')[0] ?? '(none)';
      if (leader !== lastLeader) {
        if (lastLeader) view.event(`leader changed: ${lastLeader} -> ${leader}`, last);
        lastLeader = leader;
      }
      const alive = runners.filter((r) => !r.metadata?.deletionTimestamp).length;
      return {
        elapsedMs: Date.now() - workloadBegan,
        jobs: jobCounts(sim.jobs().filter((j) => workload.jobIds.includes(j.jobId))),
        runnersByPhase: runnersByPhase(runners),
        desired: standIn ? standIn.desired : await desiredReplicas(kube),
        actual: alive,
        kubeWrites: kubeWriteCount,
        actionsCalls: Object.values(sim.callCounts()).reduce((a, b) => a + b, 0),
        leader,
        listeners: listenerPlayer?.running().length ?? 0,
      };
    };

    // The workload: run until every job has finished, the timeout passes, or Ctrl-C.
    let nextLook = 0;
    while (!io.signal.aborted) {
      if (standIn) await standIn.tick().catch((err: Error) => view.event(`stand-in: ${err.message}`, last));
      if (Date.now() >= nextLook) {
        nextLook = Date.now() + 1_000;
        last = await look();
        view.update(last);
        const done = last.jobs.succeeded + last.jobs.failed;
        if (workload.queuedAll && done >= options.jobs) break;
        if (Date.now() > deadline) {
          view.event(`!!! the workload did not finish within ${options.timeoutSeconds} s; stopping`, last);
          break;
        }
        if (options.chaos && !leaderKilled && done >= options.jobs / 3) {
          leaderKilled = true;
          const victim = await controllers.killLeader();
          killedLeaderAt = Date.now();
          const line = victim ? `chaos: killed the leader ${victim} (SIGKILL)` : 'chaos: no leader to kill';
          chaos.push(line);
          view.event(line, last);
        }
        if (options.chaos && !listenerKilled && done >= options.jobs / 2) {
          listenerKilled = true;
          const victim = await listenerPlayer?.killOne();
          const line = victim
            ? `chaos: killed the listener ${victim.pod} (SIGKILL)`
            : 'chaos: no listener to kill (none runs in runner mode)';
          chaos.push(line);
          view.event(line, last);
        }
        // A Deployment restarts a killed pod after a moment; so does the sandbox.
        if (killedLeaderAt && Date.now() - killedLeaderAt > 3_000) {
          for (const name of await controllers.restartExited()) view.event(`restarted ${name}`, last);
          killedLeaderAt = 0;
        }
      }
      await sleep(250);
    }
    const workloadMs = Date.now() - workloadBegan;
    workload.stop();

    // Drain: the scale set goes away (scale-set mode) or the runners end (runner mode), and whatever the
    // product leaves behind is counted.
    view.event('workload over; draining', last);
    if (mode === 'scale-set' && !options.keep) {
      await kube.delete(AutoscalingRunnerSetKind, RUNNER_NAMESPACE, SCALE_SET_NAME).catch(() => undefined);
    }
    const drainUntil = Date.now() + 90_000;
    while (Date.now() < drainUntil && !(io.signal.aborted && !options.keep)) {
      last = await look();
      view.update(last);
      const gone =
        last.actual === 0 &&
        (await kube.list<V1Pod>(PodKind, { namespace: RUNNER_NAMESPACE })).length === 0 &&
        (mode === 'runner' ||
          !(await exists(kube, AutoscalingRunnerSetKind, RUNNER_NAMESPACE, SCALE_SET_NAME)));
      if (gone || options.keep) break;
      await sleep(1_000);
    }
    view.release();
    const pods = await kube.list<V1Pod>(PodKind, { namespace: RUNNER_NAMESPACE });
    const secrets = (await kube.list<V1Secret>(SecretKind, { namespace: RUNNER_NAMESPACE })).filter(
      (s) => s.metadata?.name !== CREDENTIALS_SECRET,
    );
    const jobs = sim.jobs().filter((j) => workload.jobIds.includes(j.jobId));
    const waits = jobs
      .filter((j) => !j.runnerAssignTime.startsWith('0001'))
      .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime));
    const counts = jobCounts(jobs);
    report = {
      mode,
      seams,
      wallMs: workloadMs,
      jobs: options.jobs,
      succeeded: counts.succeeded,
      failed: counts.failed,
      unfinished: options.jobs - counts.succeeded - counts.failed,
      queueWaitP50Ms: percentile(waits, 50),
      queueWaitP95Ms: percentile(waits, 95),
      runnerLifecycleP50Ms: percentile(lifecycles, 50),
      runnerLifecycleP95Ms: percentile(lifecycles, 95),
      runnersSeen: created.size,
      kubeWrites: kubeWriteCount,
      actionsCalls: Object.values(sim.callCounts()).reduce((a, b) => a + b, 0),
      registrationsLeft: sim.registrations().length,
      podsLeft: pods.length,
      secretsLeft: secrets.length,
      processesLeft: 0,
      tempFoldersLeft: 0,
      chaos,
      aborted: io.signal.aborted,
      pids,
      folders,
    };
    for (const err of [...runnerPlayer.errors, ...(listenerPlayer?.errors ?? [])].slice(-5)) {
      view.event(`  player: ${err}`);
    }

    if (options.keep) {
      io.out.write(
        keepInstructions(
          cp,
          sim.url,
          controllers.replicas.map((r) => controllers.metricsUrl(r)),
          workDir,
        ),
      );
      // Until Ctrl-C the players keep playing, and in runner mode the stand-in keeps making runners
      // for jobs a person queues (curl .../_sim/jobs) and deleting finished ones, quietly.
      while (!io.signal.aborted) {
        if (standIn) await standIn.tick().catch(() => undefined);
        await sleep(1_000);
      }
    }
    pids.push(
      ...controllers.pids(),
      ...[...(listenerPlayer?.played.values() ?? [])].map((l) => l.process.pid),
    );
  } finally {
    view.release();
    for (const step of cleanup.reverse()) {
      await step().catch((err: Error) => io.out.write(`cleanup: ${err.message}\n`));
    }
    await plane?.stop();
  }
  if (!report) throw new Error('the sandbox ended without a report');
  report.processesLeft = pids.filter((pid) => processExists(pid)).length;
  report.tempFoldersLeft = folders.filter((f) => existsSync(f)).length;
  report.wallMs = report.wallMs || Date.now() - began;
  return report;
}

function restoreEnv(before: { kubeconfig?: string; controlPlane?: string }): void {
  const put = (key: string, value: string | undefined): void => {
    if (value === undefined) delete process.env[key];
    else process.env[key] = value;
  };
  put('ARO_TEST_KUBECONFIG', before.kubeconfig);
  put('ARO_TEST_CONTROL_PLANE', before.controlPlane);
}

async function exists(
  kube: KubeClient,
  kind: typeof AutoscalingRunnerSetKind,
  ns: string,
  name: string,
): Promise<boolean> {
  try {
    await kube.get(kind, ns, name);
    return true;
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/** Scale-set mode's desired count: the EphemeralRunnerSet's replicas, as the listener asked. */
async function desiredReplicas(kube: KubeClient): Promise<number> {
  const sets = await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace: RUNNER_NAMESPACE });
  return sets.reduce((sum, s) => sum + (s.spec?.replicas ?? 0), 0);
}

/** The AutoscalingRunnerSet the sandbox applies: the scale-set chart's defaults, on the simulator. */
export function autoscalingRunnerSet(configUrl: string, maxRunners: number): AutoscalingRunnerSet {
  return {
    apiVersion: API_VERSION,
    kind: 'AutoscalingRunnerSet',
    metadata: { name: SCALE_SET_NAME, namespace: RUNNER_NAMESPACE },
    spec: {
      githubConfigUrl: configUrl,
      githubConfigSecret: CREDENTIALS_SECRET,
      runnerScaleSetName: SCALE_SET_NAME,
      minRunners: 0,
      maxRunners,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'runner',
              image: 'ghcr.io/actions/actions-runner:latest',
              command: ['/home/runner/run.sh'],
            },
          ],
        },
      },
    },
  };
}

function keepInstructions(cp: ControlPlane, simUrl: string, metricsUrls: string[], workDir: string): string {
  const kc = cp.info.kubeconfigPath;
  return [
    '',
    'Left running (--keep). Ctrl-C stops everything and removes every temporary folder.',
    `  kubeconfig:      ${kc}`,
    `  simulator:       ${simUrl} (admin: ${simUrl}/_sim/state)`,
    `  controller metrics: ${metricsUrls.join(', ')}`,
    `  logs:            ${workDir}/*.log`,
    '',
    'Try:',
    `  export KUBECONFIG=${kc}`,
    `  kubectl get autoscalingrunnersets,ephemeralrunnersets,ephemeralrunners,pods -n ${RUNNER_NAMESPACE}`,
    `  kubectl get lease -n ${LEASE_NAMESPACE} aro-controller -o jsonpath='{.spec.holderIdentity}{"\\n"}'`,
    new URL(simUrl).port === String(SIMULATOR_PORT)
      ? '  kubectl apply -f examples/manifests/'
      : `  sed 's#127.0.0.1:${SIMULATOR_PORT}#${new URL(simUrl).host}#' examples/manifests/*.yaml | kubectl apply -f -   # port ${SIMULATOR_PORT} was taken`,
    `  curl -s ${simUrl}/_sim/runners`,
    `  curl -s ${metricsUrls[0] ?? ''} | grep -E '^(gha|aro)_'`,
    '',
  ].join('\n');
}

/** The summary table. */
export function renderReport(r: SandboxReport): string {
  const perJob = (n: number): string => (r.jobs > 0 ? (n / r.jobs).toFixed(2) : '-');
  const rows: Array<[string, string]> = [
    ['mode', r.mode],
    ['wall time of the workload', formatDuration(r.wallMs)],
    ['jobs done (succeeded)', `${r.succeeded} of ${r.jobs}`],
    ['jobs failed', String(r.failed)],
    ['jobs unfinished', String(r.unfinished)],
    ['queue wait p50 / p95', `${formatDuration(r.queueWaitP50Ms)} / ${formatDuration(r.queueWaitP95Ms)}`],
    [
      'runner lifecycle p50 / p95',
      `${formatDuration(r.runnerLifecycleP50Ms)} / ${formatDuration(r.runnerLifecycleP95Ms)} (${r.runnersSeen} runners)`,
    ],
    ['Kubernetes writes per job', `${perJob(r.kubeWrites)} (${r.kubeWrites} in all)`],
    ['Actions calls per job', `${perJob(r.actionsCalls)} (${r.actionsCalls} in all)`],
    ['registrations left on the service', String(r.registrationsLeft)],
    ['pods and secrets left', `${r.podsLeft + r.secretsLeft} (${r.podsLeft} pods, ${r.secretsLeft} secrets)`],
    ['processes left', String(r.processesLeft)],
    ['temporary folders left', String(r.tempFoldersLeft)],
  ];
  for (const line of r.chaos) rows.push(['chaos', line.replace(/^chaos: /, '')]);
  return `\n${table(r.aborted ? 'ARO sandbox summary (interrupted)' : 'ARO sandbox summary', rows)}\n`;
}
