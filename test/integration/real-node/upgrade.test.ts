import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { DEFAULT_PAT, startSimulator, type RunningSimulator } from '../../../apps/simulator/src';
import { ControlPlane } from '../../harness/control-plane';
import {
  FatalWait,
  listPods,
  podReady,
  runnerProgramContainer,
  waitUntil,
} from '../../harness/node/product-on-node';
import { freePort } from '../../harness/ports';
import { scaled } from '../../harness/time-scale';
import { REPO_ROOT, helmAt } from '../charts/helm-chart';
import { describeOnRealNode } from './availability';
import { getJson } from './product-state';
import { UpgradeWatch, leasePathOf, seconds } from './upgrade-watch';

jest.setTimeout(scaled(1_200_000));
const NODE_TIMEOUT_MS = scaled(1_800_000);
/** A container of the product started on a loaded 2-core machine, image present: seconds to minutes. */
const CONTAINER_START_MS = 60_000;
const CONTROLLER = { release: 'arc', namespace: 'arc-systems' };
const SCALE_SET = { release: 'arc-runner-set', namespace: 'arc-runners' };
/** The real-node suite's short lease and probe terms, so a handover takes seconds. */
const LEASE = { leaseDurationSeconds: 8, renewDeadlineSeconds: 5, retryPeriodSeconds: 1 };
const READINESS = { initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 2, failureThreshold: 2 };
const LIVENESS = { initialDelaySeconds: 60, periodSeconds: 2, timeoutSeconds: 3, failureThreshold: 5 };
/** The burst: one job every FEED_MS, each running JOB_SECONDS, so jobs are in every state at any time. */
const FEED_MS = 5_000;
const JOB_SECONDS = 6;
/** Above what the feed needs (a runner pod takes 10-20 s to start here), so a wait is the upgrade's. */
const MAX_RUNNERS = 6;

/*
 * Item 1 of the upgrade guarantees (docs/reliability.md): `helm upgrade` of both charts while jobs run.
 * Both charts are installed with helm as the README does; then, with a job queued every few seconds:
 *   1. the controller chart is upgraded to a second image (the same build with another revision label,
 *      so another digest and reference) and other values (log level debug, a newer chart version);
 *   2. the scale-set chart is upgraded (a newer chart version, an env var in the runner template);
 *   3. the controller goes back to the first image and values: the scale set is now ahead of its
 *      controller, the order upstream's users get wrong (#4227);
 *   4. the scale-set chart goes back.
 * Judged from outside: every job completed once, no runner pod deleted while its job ran, no
 * registration left, a new listener session after each listener change and never two at once, the
 * Lease handed over at each controller roll without an overlap. The windows are printed.
 */
describeOnRealNode('Rolling upgrade of both charts under load on a real node', () => {
  let plane: ControlPlane;
  let simulator: RunningSimulator;
  let origin = '';
  let derivedRef = '';
  const work = mkdtempSync(join(tmpdir(), 'aro-upgrade-'));
  const log = (line: string): void => void process.stderr.write(`[upgrade] ${line}\n`);

  beforeAll(async () => {
    plane = await ControlPlane.start({ node: true, handleSignals: true, log });
    const node = plane.node;
    if (!node) throw new Error('no real node');
    const port = await freePort();
    origin = `http://${await node.exposeHostPort(port, 'simulator')}`;
    simulator = await startSimulator({ port, publicUrl: origin });
    derivedRef = `${node.info.images.aro}-r2`;
    const began = Date.now();
    const archive = await deriveImage(node.info.images.aro, derivedRef);
    await node.exec(node.ctr('images', 'import', archive), scaled(300_000));
    log(`second image ${derivedRef} derived and imported in ${seconds(Date.now() - began)}`);
  }, NODE_TIMEOUT_MS);

  afterAll(async () => {
    if (plane?.node && derivedRef) {
      await plane.node.exec(plane.node.ctr('images', 'rm', derivedRef)).catch(() => undefined);
    }
    await simulator?.stop();
    await plane?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  function deriveImage(source: string, ref: string): Promise<string> {
    const script = join(REPO_ROOT, 'test/harness/node/derive-image.sh');
    const label = 'org.opencontainers.image.revision=upgrade-scenario-r2';
    return new Promise((resolve, reject) => {
      execFile('bash', [script, source, ref, label], { timeout: scaled(600_000) }, (err, stdout, stderr) => {
        if (err) reject(new Error(`derive-image.sh failed: ${err.message}\n${stderr}`));
        else resolve(stdout.trim().split('\n').pop() ?? '');
      });
    });
  }

  function runHelm(args: string[]): Promise<string> {
    return helmAt(plane.info.kubeconfigPath, work, args, scaled(300_000));
  }

  /** A copy of a chart with a newer version: what `helm upgrade` to the next release installs. */
  function newerChart(name: string): string {
    const dir = join(work, 'next', name);
    cpSync(join(REPO_ROOT, 'charts', name), dir, { recursive: true });
    const file = join(dir, 'Chart.yaml');
    const text = readFileSync(file, 'utf8')
      .replace(/^version: .*$/m, 'version: 0.2.0')
      .replace(/^appVersion: .*$/m, 'appVersion: "0.2.0"');
    writeFileSync(file, text);
    return dir;
  }

  function valuesFile(name: string, values: unknown): string {
    const file = join(work, `${name}.json`);
    writeFileSync(file, JSON.stringify(values));
    return file;
  }

  it('upgrades the controller, then the scale set, then both back, while jobs run, losing nothing', async () => {
    const node = plane.node;
    if (!node) throw new Error('no real node');
    const kc = plane.kubeConfig();
    const firstRef = node.info.images.aro;
    const split = (ref: string): { repository: string; tag: string } => ({
      repository: ref.slice(0, ref.lastIndexOf(':')),
      tag: ref.slice(ref.lastIndexOf(':') + 1),
    });
    const controllerValues = (ref: string, logLevel: string): string =>
      valuesFile(`controller-${logLevel}`, {
        image: { ...split(ref), pullPolicy: 'Never' },
        leaderElection: LEASE,
        readinessProbe: READINESS,
        livenessProbe: LIVENESS,
        flags: { logLevel, shutdownTimeoutSeconds: 5 },
      });
    const scaleSetValues = (revision: string | undefined): string =>
      valuesFile(`scale-set-${revision ?? 'first'}`, {
        githubConfigUrl: `${origin}/octo/hello`,
        githubConfigSecret: { github_token: DEFAULT_PAT },
        minRunners: 0,
        maxRunners: MAX_RUNNERS,
        template: {
          spec: {
            containers: [
              runnerProgramContainer(node.info.images.runner, [
                { name: 'RUNNER_JOB_WAIT_SECONDS', value: '30' },
                ...(revision ? [{ name: 'ARO_TEMPLATE_REVISION', value: revision }] : []),
              ]),
            ],
          },
        },
      });
    const controllerChart = (next: boolean): string =>
      next ? newerChart('aro-controller') : 'charts/aro-controller';
    const scaleSetChart = (next: boolean): string =>
      next ? newerChart('aro-scale-set') : 'charts/aro-scale-set';
    const helmOn = (kind: 'install' | 'upgrade', which: typeof CONTROLLER, chart: string, values: string) =>
      runHelm([
        kind,
        which.release,
        chart,
        '--namespace',
        which.namespace,
        '--create-namespace',
        '--values',
        values,
      ]);

    let watch: UpgradeWatch | undefined;
    let feeder: NodeJS.Timeout | undefined;
    try {
      await helmOn('install', CONTROLLER, controllerChart(false), controllerValues(firstRef, 'info'));
      await helmOn('install', SCALE_SET, scaleSetChart(false), scaleSetValues(undefined));
      const leasePath = await leasePathOf(kc, CONTROLLER.namespace, CONTROLLER.release);

      let scaleSetId = 0;
      await waitUntil(
        'the scale set registered with a listener session',
        4 * CONTAINER_START_MS,
        async () => {
          const set = simulator.scaleSets().find((s) => s.name === SCALE_SET.release);
          const session = set && simulator.sessions().find((s) => s.scaleSetId === set.id);
          if (!set || !session) return `${simulator.sessions().length} sessions`;
          scaleSetId = set.id;
          return true;
        },
      );
      watch = new UpgradeWatch(kc, simulator, leasePath, SCALE_SET.namespace, scaleSetId);
      watch.start();

      const jobs: string[] = [];
      const feed = (): void => {
        jobs.push(simulator.enqueueJob({ scaleSetId, displayName: `sleep=${JOB_SECONDS}` }).jobId);
      };
      feed();
      feeder = setInterval(feed, FEED_MS);
      const completed = (): number => jobs.filter((id) => simulator.job(id)?.state === 'completed').length;
      await waitUntil('jobs completing before any upgrade', 4 * CONTAINER_START_MS, async () =>
        completed() >= 3 ? true : `${completed()} of ${jobs.length} completed`,
      );

      const stages: { name: string; from: number; to: number }[] = [];
      const stage = async (name: string, step: () => Promise<void>): Promise<void> => {
        await aJobRunning();
        const from = Date.now();
        log(`stage: ${name}`);
        await step();
        stages.push({ name, from, to: Date.now() });
        log(`stage done in ${seconds(Date.now() - from)}: ${name}`);
      };

      const controllerRolledTo = async (ref: string, sessionsBefore: Set<string>): Promise<void> => {
        await waitUntil(
          `both controller replicas on ${ref}, one holding the lease`,
          5 * CONTAINER_START_MS,
          async () => {
            const pods = (
              await listPods(kc, CONTROLLER.namespace, `app.kubernetes.io/instance=${CONTROLLER.release}`)
            ).filter((p) => p.metadata?.ownerReferences?.some((o) => o.kind === 'ReplicaSet'));
            const current = pods.filter((p) => imageOf(p) === ref && !p.metadata?.deletionTimestamp);
            const old = pods.filter((p) => imageOf(p) !== ref);
            const { spec } = await getJson<{ spec?: { holderIdentity?: string } }>(kc, leasePath);
            const holder = current.find((p) => spec?.holderIdentity?.startsWith(`${p.metadata?.name}_`));
            const ready = current.filter(podReady).length;
            return ready >= 2 && old.length === 0 && holder
              ? true
              : `${ready} Ready on the image, ${old.length} old, holder ${spec?.holderIdentity || '(none)'}`;
          },
        );
        await waitUntil(`the listener pod on ${ref} with a new session`, 4 * CONTAINER_START_MS, async () => {
          const listeners = (await listPods(kc, CONTROLLER.namespace)).filter(
            (p) => p.metadata?.name?.endsWith('-listener') && !p.metadata.deletionTimestamp,
          );
          const fresh = simulator
            .sessions()
            .filter((s) => s.scaleSetId === scaleSetId && !sessionsBefore.has(s.sessionId));
          const onImage = listeners.filter((p) => imageOf(p) === ref && p.status?.phase === 'Running');
          return onImage.length === 1 && fresh.length === 1
            ? true
            : `listeners ${listeners.map((p) => `${p.metadata?.name}@${imageOf(p)}`).join(', ') || 'none'}; new sessions ${fresh.length}`;
        });
      };

      // The template change is rolled out once a job queued after it ran on a runner of the new template.
      const runnerSetAt = async (revision: string | undefined, from: number): Promise<void> => {
        await waitUntil(
          `a job run on a runner of template revision ${revision ?? 'first'}`,
          5 * CONTAINER_START_MS,
          async () => {
            const done = jobs
              .map((id) => simulator.job(id))
              .filter((j) => j?.state === 'completed' && Date.parse(j.queueTime) >= from);
            const onNew = done.filter((j) => watch?.podRevision.get(j?.runnerName ?? '') === revision);
            return onNew.length > 0 ? true : `${done.length} jobs completed since, none on the new template`;
          },
        );
      };
      // Each upgrade starts with a job running (and others queued behind the feed).
      const aJobRunning = (): Promise<void> =>
        waitUntil('a job running', 2 * CONTAINER_START_MS, async () =>
          jobs.some((id) => simulator.job(id)?.state === 'running') ? true : 'no job running',
        );

      await stage('controller upgraded (second image, debug log, chart 0.2.0)', async () => {
        const sessions = new Set(watch?.sessionIds);
        await helmOn('upgrade', CONTROLLER, controllerChart(true), controllerValues(derivedRef, 'debug'));
        await controllerRolledTo(derivedRef, sessions);
      });
      await stage('scale set upgraded (runner env, chart 0.2.0)', async () => {
        const from = Date.now();
        await helmOn('upgrade', SCALE_SET, scaleSetChart(true), scaleSetValues('2'));
        await runnerSetAt('2', from);
      });
      await stage('controller back (scale set now ahead of it)', async () => {
        const sessions = new Set(watch?.sessionIds);
        await helmOn('upgrade', CONTROLLER, controllerChart(false), controllerValues(firstRef, 'info'));
        await controllerRolledTo(firstRef, sessions);
      });
      await stage('scale set back', async () => {
        const from = Date.now();
        await helmOn('upgrade', SCALE_SET, scaleSetChart(false), scaleSetValues(undefined));
        await runnerSetAt(undefined, from);
      });
      clearInterval(feeder);
      feeder = undefined;

      await waitUntil(`all ${jobs.length} jobs completed`, 5 * CONTAINER_START_MS, async () => {
        const failed = jobs
          .map((id) => simulator.job(id))
          .filter((j) => j?.state === 'completed' && j.result !== 'succeeded');
        if (failed.length)
          throw new FatalWait(`jobs failed: ${failed.map((j) => `${j?.jobId} ${j?.result}`).join(', ')}`);
        return completed() === jobs.length ? true : `${completed()} of ${jobs.length} completed`;
      });
      await waitUntil('no registration left', 2 * CONTAINER_START_MS, async () => {
        const left = simulator.registrations({ scaleSetId });
        return left.length === 0 ? true : left.map((r) => `${r.name} (${r.status})`).join(', ');
      });
      watch.stop();

      // The windows, measured.
      const views = jobs.map((id) => simulator.job(id)).filter((j) => j !== undefined);
      const waitOf = (from: number, to: number): number[] =>
        views
          .filter((j) => Date.parse(j.queueTime) >= from && Date.parse(j.queueTime) <= to)
          .map((j) => Date.parse(j.runnerAssignTime) - Date.parse(j.queueTime));
      const handovers = watch.handovers();
      const baseline = waitOf(0, stages[0].from);
      log(
        `${jobs.length} jobs, ${watch.sessionIds.size} listener sessions, ${handovers.length} handovers; ` +
          `job wait before the upgrades: max ${seconds(Math.max(...baseline))} over ${baseline.length} jobs`,
      );
      for (const s of stages) {
        const waits = waitOf(s.from, s.to);
        const leaderGaps = handovers
          .filter((h) => h.seenAt >= s.from && h.seenAt <= s.to)
          .map((h) => seconds(h.noLeaderMs));
        log(
          `${s.name}: ${seconds(s.to - s.from)}; no leader ${leaderGaps.join(', ') || 'never'}; ` +
            `longest without a listener session ${seconds(watch.longestSessionGapMs(s.from, s.to))}; ` +
            `job wait max ${seconds(Math.max(0, ...waits))} over ${waits.length} jobs`,
        );
      }

      // Every job completed exactly once, on a runner of its own that was a pod of the scale set.
      expect(
        views.filter((j) => j.state !== 'completed' || j.result !== 'succeeded' || j.startAttempts !== 1),
      ).toEqual([]);
      const runners = views.map((j) => j.runnerName ?? '');
      expect(new Set(runners).size).toBe(views.length);
      expect(runners.filter((r) => !watch?.runnerPods.has(r))).toEqual([]);
      // No busy runner killed.
      expect(watch.busyKills).toEqual([]);
      // The listener's session moved (at both controller rolls and the template change), never two at once.
      expect(watch.sessionIds.size).toBeGreaterThanOrEqual(3);
      expect(watch.doubleSessions).toEqual([]);
      // The controller replicas handed over by the Lease at each roll, the new holder only after the old
      // one's last renewal.
      expect(handovers.length).toBeGreaterThanOrEqual(2);
      expect(handovers.filter((h) => h.noLeaderMs < 0)).toEqual([]);
      expect(watch.errors.length).toBeLessThan(watch.lease.length / 10);
    } catch (err) {
      const logs = await node.containerLogs().catch((e: Error) => `(no container logs: ${e.message})`);
      throw new Error(
        `${(err as Error).message}\n--- container logs on the node (tail) ---\n${logs.slice(-30_000)}`,
        {
          cause: err,
        },
      );
    } finally {
      if (feeder) clearInterval(feeder);
      watch?.stop();
    }
  });
});

function imageOf(pod: V1Pod): string {
  return pod.spec?.containers[0]?.image ?? '';
}
