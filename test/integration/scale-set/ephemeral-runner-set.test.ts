import type { CoreV1Event, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
  EPHEMERAL_RUNNER_FINALIZER,
  EPHEMERAL_RUNNER_SET_FINALIZER,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
  runnerProxySecretName,
} from '@aro/api';
import { EventKind, SecretKind } from '@aro/kube';
import { runnerContainerRunning, runnerContainerTerminated, waitFor } from '../../harness';
import {
  ScaleSetFixture,
  createRunnerSet,
  createScaleSetOnService,
  live,
  runnerPod,
  scaleSetSuite,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

describe('EphemeralRunnerSet controller', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  async function newSet(change?: Parameters<typeof createRunnerSet>[3]) {
    f = await suite.start();
    const name = uniqueName('ers');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await createRunnerSet(f, name, scaleSetId, change);
    return { name, scaleSetId };
  }

  /** Plays the kubelet until every live runner of the set runs its container and is registered. */
  async function startRunners(setName: string, count: number): Promise<EphemeralRunner[]> {
    const started = new Set<string>();
    return waitForRunners(
      f,
      setName,
      (runners) => {
        const alive = live(runners);
        for (const r of alive) {
          const name = r.metadata?.name ?? '';
          if (!started.has(name)) {
            void runnerPod(f, name).then(async (pod) => {
              if (pod && !started.has(name)) {
                started.add(name);
                await runnerContainerRunning(f.namespace, name).catch(() => started.delete(name));
              }
            });
          }
        }
        return alive.length === count && alive.every((r) => (r.status?.runnerId ?? 0) > 0);
      },
      `${count} registered runners`,
    );
  }

  async function runnerCount(setName: string): Promise<number> {
    return live(await f.runners(setName)).length;
  }

  it('adds its finalizer and a status to a new set (upstream: create adds finalizer)', async () => {
    const { name } = await newSet();
    const set = await waitFor(
      async () => {
        const s = await f.runnerSet(name);
        return s?.metadata?.finalizers?.includes(EPHEMERAL_RUNNER_SET_FINALIZER) &&
          s.status?.phase &&
          s.metadata.annotations?.[Annotations.integrityHash]
          ? s
          : undefined;
      },
      { description: 'the finalizer and a status' },
    );
    expect(set.status).toMatchObject({ currentReplicas: 0, phase: 'Running' });
    expect(set.metadata?.annotations?.[Annotations.integrityHash]).toBeDefined();
    expect(await f.runners(name)).toHaveLength(0);
  });

  it('creates runners for a patch, with the set as owner, both finalizers, its metadata and the patch ID (upstream: scale up with patch ID 0 / when patch ID changes; propagates metadata)', async () => {
    const { name } = await newSet((s) => {
      s.metadata!.annotations = { 'example.com/team': 'ci' };
      s.spec.ephemeralRunnerMetadata = {
        labels: { 'example.com/runner': 'yes' },
        annotations: { 'example.com/note': 'n' },
      };
    });
    await f.scale(name, 3, 1);
    const runners = await waitForRunners(f, name, (r) => r.length === 3, '3 runners');
    for (const runner of runners) {
      expect(runner.metadata?.name).toMatch(new RegExp(`^${name}-runner-`));
      expect(runner.metadata?.finalizers).toEqual([
        EPHEMERAL_RUNNER_FINALIZER,
        EPHEMERAL_RUNNER_ACTIONS_FINALIZER,
      ]);
      expect(runner.metadata?.ownerReferences?.[0]).toMatchObject({
        kind: 'EphemeralRunnerSet',
        name,
        controller: true,
      });
      expect(runner.metadata?.labels).toMatchObject({
        'app.kubernetes.io/component': 'runner',
        'actions.github.com/scale-set-name': name,
        'example.com/runner': 'yes',
      });
      expect(runner.metadata?.annotations).toMatchObject({
        [Annotations.patchId]: '1',
        'example.com/team': 'ci',
        'example.com/note': 'n',
      });
    }
    // A new patch ID with more replicas creates the difference, stamped with the new ID.
    await f.scale(name, 5, 2);
    const after = await waitForRunners(f, name, (r) => r.length === 5, '5 runners');
    expect(after.filter((r) => r.metadata?.annotations?.[Annotations.patchId] === '2')).toHaveLength(2);
    // Double scale-up with the same patch is not acted on twice (upstream: handle double scale up).
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      metadata: { labels: { poke: '1' } },
    });
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 5, {
      description: 'status currentReplicas 5',
    });
    expect(await f.runners(name)).toHaveLength(5);
  });

  it('scales 0 -> 10 -> 3 -> 0 by listener patches and never deletes the runner holding a job', async () => {
    const { name } = await newSet();
    await f.scale(name, 10, 1);
    const ten = await startRunners(name, 10);
    expect(ten).toHaveLength(10);

    // One runner takes a job: the service knows it, and the listener reports it.
    const busy = ten[4].metadata!.name!;
    const job = suite.sim.startJob(busy, { displayName: 'build' });
    await f.reportJobStarted(busy, job.jobId);

    // A positive patch never scales down (the listener counts busy runners; upstream does the same).
    await f.scale(name, 3, 2);
    await waitFor(async () => (await f.runnerSet(name))?.spec.patchID === 2, {
      description: 'patch 2 applied',
    });
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 10, {
      description: 'status 10',
    });
    expect(await runnerCount(name)).toBe(10);

    // Patch ID 0: converge. Idle runners go (registrations first), the busy one stays.
    await f.scale(name, 3, 0);
    const three = await waitForRunners(f, name, (r) => live(r).length === 3, '3 runners left');
    expect(live(three).map((r) => r.metadata?.name)).toContain(busy);
    await waitFor(
      () =>
        suite.sim.registrations().filter((r) => r.scaleSetId === ten[0].spec.runnerScaleSetId).length === 3,
      {
        description: '3 registrations left on the service',
      },
    );

    await f.scale(name, 0, 0);
    const last = await waitForRunners(f, name, (r) => live(r).length === 1, 'only the busy runner left');
    expect(live(last)[0].metadata?.name).toBe(busy);
    expect(suite.sim.runner(busy)?.jobId).toBe(job.jobId);
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 1, {
      description: 'status 1',
    });

    // The job ends, the runner exits and leaves; nothing replaces it.
    suite.sim.completeJob(job.jobId, 'succeeded');
    suite.sim.runnerExited(busy, 0);
    await runnerContainerTerminated(f.namespace, busy, 0);
    await waitForRunners(f, name, (r) => r.length === 0, 'no runners');
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 0, {
      description: 'status 0',
    });
  });

  it('keeps an idle-looking runner the service says is executing a job, and skips unregistered runners (upstream: scale down without removing pending runners)', async () => {
    const { name } = await newSet();
    await f.scale(name, 2, 1);
    const two = await startRunners(name, 2);
    // The job started on the service, but the listener's report never arrived.
    const busy = two[0].metadata!.name!;
    const job = suite.sim.startJob(busy);
    // A third runner that never registers (its pod never starts): not a candidate either.
    await f.scale(name, 3, 2);
    const three = await waitForRunners(f, name, (r) => live(r).length === 3, '3 runners');
    const unregistered = three.find((r) => !two.some((t) => t.metadata?.name === r.metadata?.name))!;
    expect(unregistered.status?.runnerId ?? 0).toBe(0);

    await f.scale(name, 0, 0);
    // The idle registered runner goes; the busy one is refused by the service; the unregistered one stays.
    const left = await waitForRunners(
      f,
      name,
      (r) => live(r).length === 2,
      'the idle registered runner gone',
    );
    expect(
      live(left)
        .map((r) => r.metadata?.name)
        .sort(),
    ).toEqual([busy, unregistered.metadata!.name!].sort());
    expect(suite.sim.runner(busy)?.jobId).toBe(job.jobId);
  });

  it('deletes a Failed runner and replaces it, never counting it as capacity (upstream #3014, #4258)', async () => {
    const { name } = await newSet();
    await f.scale(name, 2, 1);
    const two = await waitForRunners(f, name, (r) => r.length === 2, '2 runners');
    const failed = two[0].metadata!.name!;
    // The EphemeralRunner controller gives up on a runner this way (e.g. its pod is invalid).
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, failed, {
      status: { phase: 'Failed', reason: 'InvalidPod', message: 'injected by the test' },
    });
    const replaced = await waitForRunners(
      f,
      name,
      (r) => live(r).length === 2 && !r.some((x) => x.metadata?.name === failed),
      'the failed runner gone and replaced',
    );
    // The replacement carries the same patch: it is not a new scale-up.
    expect(replaced.every((r) => r.metadata?.annotations?.[Annotations.patchId] === '1')).toBe(true);
    const set = await waitFor(
      async () => {
        const s = await f.runnerSet(name);
        return s?.status?.currentReplicas === 2 && (s.status.failedEphemeralRunners ?? 0) === 0
          ? s
          : undefined;
      },
      { description: 'status with 2 current and 0 failed' },
    );
    expect(set.status?.currentReplicas).toBe(2);
    const events = await f.list<CoreV1Event>(EventKind);
    expect(events.some((e) => e.reason === 'RunnerFailed' && e.involvedObject?.name === name)).toBe(true);
  });

  it('removes a Succeeded runner and does not replace it until the next patch (upstream: keep finished until patch changes / replace finished on a new patch)', async () => {
    const { name } = await newSet();
    await f.scale(name, 2, 1);
    const two = await waitForRunners(f, name, (r) => r.length === 2, '2 runners');
    const finished = two[1].metadata!.name!;
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, finished, {
      status: { phase: 'Succeeded' },
    });
    await waitForRunners(f, name, (r) => live(r).length === 1, 'the finished runner removed');
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 1, {
      description: 'status 1',
    });
    expect(live(await f.runners(name))).toHaveLength(1);
    await f.scale(name, 2, 2);
    await waitForRunners(f, name, (r) => live(r).length === 2, 'a new runner for the new patch');
  });

  /**
   * A job the listener counted after another job completed, whose runner exits only after the
   * listener's patch arrived: the order a loaded machine gives (the listener's answer to JobCompleted
   * is faster than the runner's exit, the kubelet's report and a status write). The set used to hold
   * the finished runner's slot, or take the patch as acted on, until the listener's next patch: its
   * idle poll, ~50 s later. `named` is ARO's listener (it names the runner whose job completed);
   * without it, upstream's listener.
   */
  async function jobAfterAnotherCompleted(named: boolean): Promise<number> {
    const { name } = await newSet();
    await f.scale(name, 2, 1);
    const [a, b] = (await startRunners(name, 2)).map((r) => r.metadata!.name!);
    const jobA = suite.sim.startJob(a, { displayName: 'build' });
    const jobB = suite.sim.startJob(b, { displayName: 'build' });
    await f.reportJobStarted(a, jobA.jobId);
    await f.reportJobStarted(b, jobB.jobId);

    // A's job completes and a new one is assigned: still two jobs, one of them without a runner.
    suite.sim.completeJob(jobA.jobId, 'succeeded');
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      metadata: { annotations: { [Annotations.completedRunners]: named ? a : null } },
      spec: { replicas: 2, patchID: 2 },
    });
    // The set has looked at the patch (its status counts both runners, A still running).
    await waitFor(async () => (await f.runnerSet(name))?.status?.currentReplicas === 2, {
      description: 'the set counting A and B under the new patch',
    });

    // Then A's runner exits.
    const exitedAt = Date.now();
    suite.sim.runnerExited(a, 0);
    await runnerContainerTerminated(f.namespace, a, 0, { phase: 'Succeeded' });
    await waitFor(
      async () => live(await f.runners(name)).some((r) => ![a, b].includes(r.metadata?.name ?? '')),
      {
        description: "a runner for the new job, well before the listener's next idle poll",
        timeoutMs: 15_000,
      },
    );
    return Date.now() - exitedAt;
  }

  it("gives a job the listener counted after another completed a runner at once, when that job's runner exits after the patch (ARO's listener names it)", async () => {
    const tookMs = await jobAfterAnotherCompleted(true);
    console.log(`A runner for the new job ${tookMs} ms after the finished runner exited (named)`);
  });

  it("gives that job a runner within seconds also when the listener does not name the finished runner (upstream's listener)", async () => {
    const tookMs = await jobAfterAnotherCompleted(false);
    console.log(`A runner for the new job ${tookMs} ms after the finished runner exited (not named)`);
  });

  it('stops creating runners once one is Outdated, with phase and condition, and resumes on a new spec (#4600)', async () => {
    const { name } = await newSet();
    await f.scale(name, 2, 1);
    const two = await waitForRunners(f, name, (r) => r.length === 2, '2 runners');
    await f.kube.mergePatchStatus(EphemeralRunnerKind, f.namespace, two[0].metadata!.name!, {
      status: { phase: 'Outdated', reason: 'Outdated', message: 'Runner is deprecated' },
    });
    const set = await waitFor(
      async () => {
        const s = await f.runnerSet(name);
        return s?.status?.phase === 'Outdated' ? s : undefined;
      },
      { description: 'phase Outdated' },
    );
    expect(set.status?.conditions?.find((c) => c.type === 'RunnerVersionCurrent')).toMatchObject({
      status: 'False',
      reason: 'Outdated',
    });
    await waitForRunners(f, name, (r) => r.length === 0, 'the set emptied');
    // A new patch does not bring runners back while the set is Outdated.
    await f.scale(name, 4, 2);
    await waitFor(async () => (await f.runnerSet(name))?.spec.patchID === 2, { description: 'patch 2' });
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      metadata: { labels: { poke: '1' } },
    });
    await waitFor(async () => (await f.runnerSet(name))?.metadata?.labels?.poke === '1', {
      description: 'poke',
    });
    expect(await f.runners(name)).toHaveLength(0);

    // A new runner image: the set leaves Outdated and scales again.
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      spec: {
        patchID: 3,
        ephemeralRunnerSpec: {
          spec: {
            containers: [
              {
                name: 'runner',
                image: 'ghcr.io/actions/actions-runner:2.999.0',
                command: ['/home/runner/run.sh'],
              },
            ],
          },
        },
      },
    });
    await waitForRunners(f, name, (r) => live(r).length === 4, '4 runners of the new spec');
    const after = await f.runnerSet(name);
    expect(after?.status?.phase).toBe('Running');
    expect(after?.status?.conditions?.find((c) => c.type === 'RunnerVersionCurrent')?.status).toBe('True');
  });

  it('replaces idle runners and keeps busy ones when the runner spec changes (upstream: delete idle, keep busy, create new on spec change)', async () => {
    const { name } = await newSet();
    await f.scale(name, 3, 1);
    const three = await startRunners(name, 3);
    const busy = three[0].metadata!.name!;
    const job = suite.sim.startJob(busy);
    await f.reportJobStarted(busy, job.jobId);
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      spec: {
        ephemeralRunnerSpec: {
          spec: {
            containers: [
              {
                name: 'runner',
                image: 'ghcr.io/actions/actions-runner:2.999.0',
                command: ['/home/runner/run.sh'],
              },
            ],
          },
        },
      },
    });
    const after = await waitForRunners(
      f,
      name,
      (r) =>
        live(r).length === 3 &&
        r.filter((x) => x.spec.spec?.containers[0].image?.endsWith('2.999.0')).length === 2,
      'two new-spec runners beside the busy one',
    );
    expect(after.map((r) => r.metadata?.name)).toContain(busy);
    const runner = after.find((r) => r.metadata?.name === busy);
    expect(runner?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('scales up with patch ID 0 and publishes the runner counts as upstream gauges with upstream labels (upstream: scale up with patch ID 0)', async () => {
    const { name } = await newSet();
    await f.scale(name, 2, 0);
    await waitForRunners(f, name, (r) => r.length === 2, '2 runners');
    const series = `{name="${name}",namespace="${f.namespace}",repository="",organization="octo",enterprise=""}`;
    const value = async (metric: string) =>
      (await f.registry.getSingleMetricAsString(metric))
        .split('\n')
        .find((line) => line.startsWith(`${metric}${series} `))
        ?.split(' ')[1];
    await waitFor(async () => (await value('gha_controller_pending_ephemeral_runners')) === '2', {
      description: `gha_controller_pending_ephemeral_runners${series} at 2`,
    });
    expect(await value('gha_controller_running_ephemeral_runners')).toBe('0');
    expect(await value('gha_controller_failed_ephemeral_runners')).toBe('0');
    // The set goes: so do its series.
    await f.kube.delete(EphemeralRunnerSetKind, f.namespace, name);
    await waitFor(async () => (await value('gha_controller_pending_ephemeral_runners')) === undefined, {
      description: 'the series removed with the set',
    });
  });

  it("has one writer per runner gauge series: a set's runners are counted by the set alone, in the app's one registry", async () => {
    // The set's own gauges off: what remains under its labels could only come from the runner-level
    // phase metrics of the EphemeralRunner controller, which runs in the same app and registry.
    f = await suite.start({ runnerSet: { publishMetrics: false } });
    const name = uniqueName('ers');
    await createRunnerSet(f, name, await createScaleSetOnService(suite.sim, name));
    await f.scale(name, 2, 1);
    // Evidence the runner controller looked: it wrote each runner's phase (where it publishes).
    await startRunners(name, 2);
    await waitForRunners(
      f,
      name,
      (r) => r.length === 2 && r.every((x) => !!x.status?.phase),
      'a phase on both runners',
    );
    const served = await f.registry.metrics();
    const ofThisSet = served
      .split('\n')
      .filter((line) => /^gha_controller_(pending|running|failed)_ephemeral_runners\{/.test(line))
      .filter((line) => line.includes(`name="${name}"`));
    expect(ofThisSet).toEqual([]);
  });

  it('creates the runner proxy secret, points runners at it, and deletes it with the set (upstream: proxy secret create/delete)', async () => {
    const { name } = await newSet((s) => {
      s.spec.ephemeralRunnerSpec.proxy = {
        http: { url: 'http://proxy.example:3128', credentialSecretRef: 'proxy-creds' },
        noProxy: ['a.example', '127.0.0.1'],
      };
    });
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'proxy-creds', namespace: f.namespace },
      stringData: { username: 'user', password: 'p@ss' },
    });
    const secretName = runnerProxySecretName(name, f.namespace);
    const secret = await waitFor(() => f.read<V1Secret>(SecretKind, secretName), {
      description: 'the proxy secret',
    });
    const data = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
    );
    expect(data).toEqual({
      http_proxy: 'http://user:p%40ss@proxy.example:3128/',
      no_proxy: 'a.example,127.0.0.1',
    });
    await f.scale(name, 1, 1);
    const [runner] = await waitForRunners(f, name, (r) => r.length === 1, 'a runner');
    expect(runner.spec.proxySecretRef).toBe(secretName);

    await f.kube.delete(EphemeralRunnerSetKind, f.namespace, name);
    await waitFor(async () => (await f.runnerSet(name)) === undefined, { description: 'the set gone' });
    expect(await f.read(SecretKind, secretName)).toBeUndefined();
  });

  it('on deletion releases and deletes every runner, waits for the busy one, then goes (upstream: delete cleans all runners first)', async () => {
    const { name, scaleSetId } = await newSet();
    await f.scale(name, 3, 1);
    const three = await startRunners(name, 3);
    const busy = three[2].metadata!.name!;
    const job = suite.sim.startJob(busy);
    await f.reportJobStarted(busy, job.jobId);

    await f.kube.delete(EphemeralRunnerSetKind, f.namespace, name);
    const left = await waitForRunners(f, name, (r) => r.length === 1, 'only the busy runner left');
    expect(live(left)[0].metadata?.name).toBe(busy);
    expect((await f.runnerSet(name))?.metadata?.finalizers).toContain(EPHEMERAL_RUNNER_SET_FINALIZER);
    expect(
      suite.sim
        .registrations()
        .filter((r) => r.scaleSetId === scaleSetId)
        .map((r) => r.name),
    ).toEqual([busy]);

    suite.sim.completeJob(job.jobId, 'succeeded');
    suite.sim.runnerExited(busy, 0);
    await runnerContainerTerminated(f.namespace, busy, 0);
    await waitFor(async () => (await f.runnerSet(name)) === undefined, {
      description: 'the set gone',
      timeoutMs: 60_000,
    });
    expect(await f.runners(name)).toHaveLength(0);
    expect(suite.sim.registrations().filter((r) => r.scaleSetId === scaleSetId)).toHaveLength(0);
  });
});
