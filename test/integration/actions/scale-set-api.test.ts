// Contract: every call of the Actions service client against the simulator, and every typed error.
import {
  ActionsError,
  ActionsServiceClient,
  isJobStillRunning,
  isMessageQueueTokenExpired,
  isActionsNotFound,
  isRunnerExists,
  isRunnerNotFound,
  isSessionConflict,
  isUnauthorized,
  parseJobMessages,
} from '@aro/actions';
import { decodeJitConfig, RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { closeClients, errorOf, simClient } from './support';

describe('Actions service client: scale-set API against the simulator', () => {
  let sim: RunningSimulator;
  let client: ActionsServiceClient;

  beforeEach(async () => {
    sim = await startSimulator({ seed: { timing: { longPollTimeoutMs: 200 } } });
    client = simClient(sim);
  });

  afterEach(async () => {
    await closeClients();
    await sim.stop();
  });

  async function scaleSet(name = 'arc-runner-set') {
    return client.createRunnerScaleSet({ name, runnerGroupId: 1, runnerSetting: { disableUpdate: true } });
  }

  describe('runner groups and scale sets', () => {
    it('finds the default group and a created one, and says NotFound for an unknown name', async () => {
      expect(await client.getRunnerGroupByName('Default')).toMatchObject({ id: 1, isDefaultGroup: true });
      const id = sim.createRunnerGroup({ org: 'octo' }, 'gpu & co');
      expect(await client.getRunnerGroupByName('gpu & co')).toMatchObject({ id, name: 'gpu & co' });
      const err = await errorOf(client.getRunnerGroupByName('nope'));
      expect(isActionsNotFound(err)).toBe(true);
      expect((err as Error).message).toContain('no runner group found with name "nope"');
    });

    it('creates a scale set with a default System label, then finds it by group and name and by id', async () => {
      expect(await client.getRunnerScaleSet(1, 'arc-runner-set')).toBeUndefined();
      const created = await scaleSet();
      expect(created).toMatchObject({
        name: 'arc-runner-set',
        runnerGroupId: 1,
        runnerGroupName: 'Default',
        labels: [{ name: 'arc-runner-set', type: 'System' }],
        runnerSetting: { disableUpdate: true },
      });
      expect(created.id).toBeGreaterThan(0);
      expect(sim.scaleSets().map((s) => s.name)).toEqual(['arc-runner-set']);
      expect(await client.getRunnerScaleSet(1, 'arc-runner-set')).toMatchObject({ id: created.id });
      expect(await client.getRunnerScaleSetById(created.id)).toMatchObject({
        id: created.id,
        name: 'arc-runner-set',
      });
    });

    it('sends extra labels with the System type filled in', async () => {
      const created = await client.createRunnerScaleSet({
        name: 'labelled',
        runnerGroupId: 1,
        labels: [{ name: 'labelled' }, { name: 'linux', type: 'System' }],
      });
      expect(sim.scaleSets().find((s) => s.id === created.id)?.labels).toEqual([
        { name: 'labelled', type: 'System' },
        { name: 'linux', type: 'System' },
      ]);
    });

    it('refuses a duplicate scale set name with the service exception and status', async () => {
      await scaleSet();
      const err = (await errorOf(scaleSet())) as ActionsError;
      expect(err).toBeInstanceOf(ActionsError);
      expect(err).toMatchObject({ kind: 'Other', statusCode: 409 });
      expect(err.typeName).toContain('RunnerScaleSetExistsException');
      expect(err.activityId).toBeTruthy();
    });

    it('updates only the fields given', async () => {
      const created = await scaleSet();
      const groupId = sim.createRunnerGroup({ org: 'octo' }, 'other');
      const moved = await client.updateRunnerScaleSet(created.id, { runnerGroupId: groupId });
      expect(moved).toMatchObject({
        name: 'arc-runner-set',
        runnerGroupId: groupId,
        runnerGroupName: 'other',
      });
      const renamed = await client.updateRunnerScaleSet(created.id, { name: 'renamed' });
      expect(renamed).toMatchObject({ name: 'renamed', runnerGroupId: groupId });
      expect(sim.scaleSets()[0]).toMatchObject({ name: 'renamed', runnerGroupId: groupId });
    });

    it('deletes a scale set, after which it is not found by id', async () => {
      const created = await scaleSet();
      await client.deleteRunnerScaleSet(created.id);
      expect(sim.scaleSets()).toEqual([]);
      const err = await errorOf(client.getRunnerScaleSetById(created.id));
      expect(isActionsNotFound(err)).toBe(true);
      expect(isActionsNotFound(await errorOf(client.deleteRunnerScaleSet(created.id)))).toBe(true);
    });
  });

  describe('runners', () => {
    it('generates a JIT config that registers the runner, and finds it by id, by name and in the list', async () => {
      const ss = await scaleSet();
      const jit = await client.generateJitRunnerConfig({ name: 'runner-a', workFolder: '_work' }, ss.id);
      expect(jit.runner).toMatchObject({ name: 'runner-a', runnerScaleSetId: ss.id });
      expect(decodeJitConfig(jit.encodedJITConfig)).toMatchObject({
        runnerId: jit.runner.id,
        runnerName: 'runner-a',
        runnerScaleSetId: ss.id,
        workFolder: '_work',
      });
      expect(sim.runner('runner-a')).toMatchObject({ id: jit.runner.id, scaleSetId: ss.id });

      expect(await client.getRunner(jit.runner.id)).toEqual(jit.runner);
      expect(await client.getRunnerByName('runner-a')).toEqual(jit.runner);
      expect(await client.getRunnerByName('runner-b')).toBeUndefined();

      const other = await scaleSet('other-set');
      await client.generateJitRunnerConfig({ name: 'runner-b' }, other.id);
      expect((await client.listRunners()).map((r) => r.name).sort()).toEqual(['runner-a', 'runner-b']);
      expect((await client.listRunners(ss.id)).map((r) => r.name)).toEqual(['runner-a']);
    });

    it('reports RunnerExists for a taken runner name', async () => {
      const ss = await scaleSet();
      await client.generateJitRunnerConfig({ name: 'runner-a' }, ss.id);
      const err = (await errorOf(
        client.generateJitRunnerConfig({ name: 'runner-a' }, ss.id),
      )) as ActionsError;
      expect(isRunnerExists(err)).toBe(true);
      expect(err.statusCode).toBe(409);
    });

    it('removes an idle runner, which is then RunnerNotFound for get, and removes it again without error', async () => {
      const ss = await scaleSet();
      const { runner } = await client.generateJitRunnerConfig({ name: 'runner-a' }, ss.id);
      await client.removeRunner(runner.id);
      expect(sim.runner('runner-a')).toBeUndefined();
      const got = await errorOf(client.getRunner(runner.id));
      expect(isRunnerNotFound(got)).toBe(true);
      expect(isActionsNotFound(got)).toBe(true);
      // The real service answers 204 to the DELETE of a registration that is already gone.
      await client.removeRunner(runner.id);
      expect(sim.callCount('DELETE agents/{id}')).toBe(2);
      expect(isRunnerNotFound(await errorOf(client.removeRunner(987654)))).toBe(true);
    });

    it('removes a runner that deregistered itself after its job (exit 0) without error, as the finalizer does', async () => {
      const ss = await scaleSet();
      const { runner } = await client.generateJitRunnerConfig({ name: 'runner-done' }, ss.id);
      sim.runnerConnected('runner-done');
      const job = sim.startJob('runner-done');
      sim.completeJob(job.jobId, 'succeeded');
      sim.runnerExited('runner-done', 0);
      expect(sim.runner('runner-done')).toBeUndefined();
      await expect(client.removeRunner(runner.id)).resolves.toBeUndefined();
      expect(sim.callCount('DELETE agents/{id}')).toBe(1);
      expect(sim.registrations()).toEqual([]);
    });

    it('reports JobStillRunning when removing a runner that runs a job, and keeps the runner', async () => {
      const ss = await scaleSet();
      const { runner } = await client.generateJitRunnerConfig({ name: 'runner-a' }, ss.id);
      sim.runnerConnected('runner-a');
      sim.startJob('runner-a');
      const err = (await errorOf(client.removeRunner(runner.id))) as ActionsError;
      expect(isJobStillRunning(err)).toBe(true);
      expect(err.statusCode).toBe(400);
      expect(sim.runner('runner-a')).toMatchObject({ status: 'busy' });
    });
  });

  describe('message sessions and the queue', () => {
    it('runs the listener protocol: session, message, acknowledge, acquire, refresh, delete', async () => {
      const ss = await scaleSet();
      const session = await client.createMessageSession(ss.id, 'listener-pod');
      expect(session).toMatchObject({ ownerName: 'listener-pod', runnerScaleSet: { id: ss.id } });
      expect(session.statistics).toBeDefined();
      expect(sim.sessions()).toHaveLength(1);

      expect(
        await client.getMessage(session.messageQueueUrl, session.messageQueueAccessToken, 0, 5),
      ).toBeUndefined();

      const job = sim.enqueueJob({ scaleSetId: ss.id });
      const message = await client.getMessage(session.messageQueueUrl, session.messageQueueAccessToken, 0, 5);
      expect(message).toBeDefined();
      const jobs = parseJobMessages(message!);
      expect(jobs).toEqual([
        expect.objectContaining({ messageType: 'JobAvailable', runnerRequestId: job.runnerRequestId }),
      ]);
      expect(sim.sessions()[0].maxCapacity).toBe(5);

      await client.deleteMessage(
        session.messageQueueUrl,
        session.messageQueueAccessToken,
        message!.messageId,
      );
      expect(sim.sessions()[0]).toMatchObject({
        acknowledgedMessageId: message!.messageId,
        pendingMessages: 0,
      });

      const acquired = await client.acquireJobs(ss.id, session.messageQueueAccessToken, [
        job.runnerRequestId,
        999_999,
      ]);
      expect(acquired).toEqual([job.runnerRequestId]);
      expect(sim.job(job.jobId)?.state).toBe('acquired');

      const refreshed = await client.refreshMessageSession(ss.id, session.sessionId);
      expect(refreshed.sessionId).toBe(session.sessionId);
      expect(refreshed.messageQueueAccessToken).not.toBe(session.messageQueueAccessToken);

      await client.deleteMessageSession(ss.id, session.sessionId);
      expect(sim.sessions()).toEqual([]);
    });

    it('reports SessionConflict for a second live session on a scale set', async () => {
      const ss = await scaleSet();
      await client.createMessageSession(ss.id, 'listener-1');
      const err = (await errorOf(client.createMessageSession(ss.id, 'listener-2'))) as ActionsError;
      expect(isSessionConflict(err)).toBe(true);
      expect(err.statusCode).toBe(409);
    });

    it('reports MessageQueueTokenExpired on every queue call once the queue token lapses, until the session is refreshed', async () => {
      const ss = await scaleSet();
      const session = await client.createMessageSession(ss.id, 'listener-pod');
      const job = sim.enqueueJob({ scaleSetId: ss.id });
      sim.expireQueueTokens();
      const { messageQueueUrl: url, messageQueueAccessToken: token } = session;

      expect(isMessageQueueTokenExpired(await errorOf(client.getMessage(url, token, 0, 1)))).toBe(true);
      expect(isMessageQueueTokenExpired(await errorOf(client.deleteMessage(url, token, 1)))).toBe(true);
      expect(
        isMessageQueueTokenExpired(await errorOf(client.acquireJobs(ss.id, token, [job.runnerRequestId]))),
      ).toBe(true);

      const fresh = await client.refreshMessageSession(ss.id, session.sessionId);
      const message = await client.getMessage(fresh.messageQueueUrl, fresh.messageQueueAccessToken, 0, 1);
      expect(parseJobMessages(message!)[0]).toMatchObject({ messageType: 'JobAvailable' });
    });

    it('treats messages up to lastMessageId as processed', async () => {
      const ss = await scaleSet();
      const session = await client.createMessageSession(ss.id, 'listener-pod');
      sim.enqueueJob({ scaleSetId: ss.id });
      const first = await client.getMessage(session.messageQueueUrl, session.messageQueueAccessToken, 0, 2);
      expect(
        await client.getMessage(
          session.messageQueueUrl,
          session.messageQueueAccessToken,
          first!.messageId,
          2,
        ),
      ).toBeUndefined();
      expect(sim.sessions()[0].acknowledgedMessageId).toBe(first!.messageId);
    });

    it('lists acquirable jobs, empty (204) when there are none', async () => {
      const ss = await scaleSet();
      expect(await client.getAcquirableJobs(ss.id)).toEqual([]);
      await client.createMessageSession(ss.id, 'listener-pod');
      const job = sim.enqueueJob({ scaleSetId: ss.id });
      const jobs = await client.getAcquirableJobs(ss.id);
      expect(jobs.map((j) => j.runnerRequestId)).toEqual([job.runnerRequestId]);
    });
  });

  describe('response shapes', () => {
    it('reads BOM-prefixed bodies and text/plain or empty error bodies', async () => {
      sim.injectFault({ route: 'GET runnergroups', bom: true, times: 1 });
      expect(await client.getRunnerGroupByName('Default')).toMatchObject({ id: 1 });

      sim.injectFault({ route: 'GET agents/{id}', textPlainErrors: true, times: 1 });
      const plain = (await errorOf(client.getRunner(424242))) as ActionsError;
      expect(plain.statusCode).toBe(404);
      expect(plain.message).toContain('No agent found');

      sim.injectFault({ route: 'GET agents/{id}', emptyErrorBodies: true, times: 1 });
      const empty = (await errorOf(client.getRunner(424242))) as ActionsError;
      expect(empty).toMatchObject({ kind: 'NotFound', statusCode: 404 });
      expect(empty.message).toContain('empty body');
    });

    it('reports Unauthorized with the GitHub request id for a PAT GitHub refuses', async () => {
      const bad = simClient(sim, { credentials: { kind: 'pat', token: 'ghp_wrong' } });
      const err = (await errorOf(bad.listRunners())) as ActionsError;
      expect(isUnauthorized(err)).toBe(true);
      expect(err.statusCode).toBe(401);
      expect(err.requestId).toMatch(/^SIM:/);
      expect(err.url).toContain('/api/v3/orgs/octo/actions/runners/registration-token');
    });
  });
});
