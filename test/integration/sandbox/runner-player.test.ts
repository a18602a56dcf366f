import { Watch, type V1Pod } from '@kubernetes/client-node';
import { RunnerPlayer, testKubeConfig, waitFor } from '../../harness';
import { controllerSuite, type ControllerFixture } from '../ephemeral-runner/fixture';
import { ApiProxy } from '../kube/api-proxy';

/**
 * The runner player against the real EphemeralRunner controller and the simulator: each test creates a
 * runner, lets the service assign it a job (as the listener's acquire would), and watches the player
 * play the runner to its end, asserting on the service's jobs and registrations and the apiserver's
 * objects.
 */
describe('RunnerPlayer', () => {
  const suite = controllerSuite();
  const players: RunnerPlayer[] = [];
  afterEach(async () => {
    for (const p of players.splice(0)) await p.stop();
  });

  const play = (
    f: ControllerFixture,
    options: Partial<ConstructorParameters<typeof RunnerPlayer>[0]> = {},
  ) => {
    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace: f.namespace,
      service: suite.sim,
      jobDurationMs: 300,
      pollIntervalMs: 100,
      ...options,
    }).start();
    players.push(player);
    return player;
  };

  /** Queues a job on the fixture's scale set and binds it to the runner once it is registered. */
  async function jobFor(f: ControllerFixture, runner: string): Promise<string> {
    const job = suite.sim.enqueueJob({ scaleSetId: f.scaleSetId });
    await waitFor(() => suite.sim.runner(runner), {
      description: `registration of ${runner}`,
      timeoutMs: 60_000,
    });
    suite.sim.assignJobToRunner(runner, job.jobId);
    return job.jobId;
  }

  it('runs the assigned job to success, exits 0, and the controller removes the runner', async () => {
    const f = await suite.start();
    const player = play(f);
    await f.createRunner('player-ok');
    const jobId = await jobFor(f, 'player-ok');

    const job = await waitFor(
      () => (suite.sim.job(jobId)?.state === 'completed' ? suite.sim.job(jobId) : undefined),
      {
        description: `job ${jobId} to complete`,
        timeoutMs: 60_000,
      },
    );
    expect(job).toMatchObject({ result: 'succeeded', runnerName: 'player-ok' });
    await f.waitForRunner('player-ok', (r) => r === undefined, 'the runner to be deleted', 60_000);
    expect(suite.sim.runner('player-ok')).toBeUndefined();
    expect(player.outcomes.get('player-ok')).toBe('succeeded');
    expect(player.errors).toEqual([]);
  });

  it('a failing job fails on the service while the runner still exits 0', async () => {
    const f = await suite.start();
    const player = play(f, { failShare: 1 });
    await f.createRunner('player-fail');
    const jobId = await jobFor(f, 'player-fail');

    await waitFor(() => suite.sim.job(jobId)?.state === 'completed', {
      description: `job ${jobId}`,
      timeoutMs: 60_000,
    });
    expect(suite.sim.job(jobId)?.result).toBe('failed');
    await f.waitForRunner('player-fail', (r) => r === undefined, 'the runner to be deleted', 60_000);
    expect(suite.sim.runner('player-fail')).toBeUndefined();
    expect(player.outcomes.get('player-fail')).toBe('job-failed');
  });

  it('a runner that exits 7 fails its job and its pod shows exit code 7', async () => {
    const f = await suite.start();
    // The controller deletes a failed pod within milliseconds, so the exit code is caught from a watch
    // of the namespace's pods (every status update the apiserver made), not from polling the pod.
    const exits: number[] = [];
    const watch = await new Watch(testKubeConfig()).watch(
      `/api/v1/namespaces/${f.namespace}/pods`,
      {},
      (_type: string, pod: V1Pod) => {
        if (pod.metadata?.name !== 'player-seven') return;
        const code = pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode;
        if (code !== undefined) exits.push(code);
      },
      () => undefined,
    );
    try {
      const player = play(f, { exit7Share: 1, jobWaitTimeoutMs: 2_000 });
      await f.createRunner('player-seven');
      const jobId = await jobFor(f, 'player-seven');

      await waitFor(() => suite.sim.job(jobId)?.state === 'completed' && exits.includes(7), {
        description: `job ${jobId} failed and the pod terminated with 7`,
        timeoutMs: 60_000,
      });
      expect(suite.sim.job(jobId)?.result).toBe('failed');
      expect(player.outcomes.get('player-seven')).toBe('exit-7');
    } finally {
      watch.abort();
    }
  });

  it('plays a runner through failed reads of its pod: the runner is neither stopped nor its pod deleted', async () => {
    const f = await suite.start();
    // The player reads its pods through a proxy the test cuts; the pod's status writes (the kubelet's
    // part) go straight to the apiserver.
    const proxy = new ApiProxy(testKubeConfig());
    await proxy.start();
    try {
      const player = play(f, { kubeConfig: proxy.kubeConfig() });
      await f.createRunner('player-reads');
      await waitFor(() => suite.sim.runner('player-reads')?.status === 'idle', {
        description: 'the runner connected and waiting for its job',
        timeoutMs: 60_000,
      });
      // Ten of the player's 100 ms looks fail to connect: a read that failed says nothing about the pod.
      await proxy.down();
      await new Promise((r) => setTimeout(r, 1_000));
      await proxy.up();
      const jobId = await jobFor(f, 'player-reads');
      await waitFor(() => suite.sim.job(jobId)?.state === 'completed', {
        description: `job ${jobId} to complete on the runner`,
        timeoutMs: 60_000,
      });
      expect(suite.sim.job(jobId)?.result).toBe('succeeded');
      await f.waitForRunner('player-reads', (r) => r === undefined, 'the runner to be deleted', 60_000);
      expect(player.outcomes.get('player-reads')).toBe('succeeded');
      expect(player.errors).toEqual([]);
    } finally {
      await proxy.close();
    }
  });
});
