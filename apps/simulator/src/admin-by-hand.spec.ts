import { startSimulator, type RunningSimulator } from './index';
import { apiUrl, call, connectAdmin, createSession, generateJit, obj } from './spec-helpers';

// What a person (or the sandbox) needs to drive the simulator with curl alone: make a scale set,
// queue jobs with labels, and list runners and jobs, narrowed by scale set and state.
describe('simulator admin API: driving it by hand', () => {
  let sim: RunningSimulator;

  beforeEach(async () => {
    sim = await startSimulator();
  });

  afterEach(() => sim.stop());

  const admin = (method: string, path: string, body?: unknown) =>
    call(method, `${sim.url}/_sim/${path}`, { body });

  it('creates a scale set in an owner’s tenant that the protocol then finds, with its group and labels', async () => {
    const created = obj(
      await admin('POST', 'scalesets', {
        owner: { org: 'octo' },
        name: 'linux-set',
        runnerGroup: 'gpu',
        labels: ['linux', 'X64'],
        runnerSetting: { disableUpdate: true },
      }),
    );
    expect(created).toMatchObject({
      name: 'linux-set',
      tenantId: sim.tenantId({ org: 'octo' }),
      runnerGroupName: 'gpu',
      labels: [
        { type: 'System', name: 'linux' },
        { type: 'System', name: 'X64' },
      ],
      runnerSetting: { disableUpdate: true },
      statistics: { totalAvailableJobs: 0, totalRegisteredRunners: 0 },
    });
    expect(obj(await admin('GET', `scalesets/${String(created.id)}`))).toEqual(created);

    const conn = await connectAdmin(sim);
    const found = obj(
      await call(
        'GET',
        apiUrl(conn, 'runtime/runnerscalesets', {
          runnerGroupId: created.runnerGroupId as number,
          name: 'linux-set',
        }),
        { auth: conn.auth },
      ),
    );
    expect(found).toMatchObject({
      count: 1,
      value: [{ id: created.id, RunnerSetting: { disableUpdate: true } }],
    });

    // Without labels the name is the one label; without a group it lands in Default.
    expect(
      obj(await admin('POST', 'scalesets', { owner: { org: 'octo', repo: 'hello' }, name: 'plain' })),
    ).toMatchObject({
      runnerGroupId: 1,
      runnerGroupName: 'Default',
      labels: [{ type: 'System', name: 'plain' }],
    });
  });

  it('refuses a duplicate name, an unknown owner, an unknown group and bad fields with 400 and the reason', async () => {
    await admin('POST', 'scalesets', { owner: { org: 'octo' }, name: 'taken' });
    const duplicate = await admin('POST', 'scalesets', { owner: { org: 'octo' }, name: 'taken' });
    expect(duplicate.status).toBe(400);
    expect(obj(duplicate).error).toContain("'taken' already exists");
    expect((await admin('POST', 'scalesets', { owner: { org: 'nobody' }, name: 'x' })).status).toBe(400);
    const group = await admin('POST', 'scalesets', { owner: { org: 'octo' }, name: 'x', runnerGroupId: 99 });
    expect(group.status).toBe(400);
    expect(obj(group).error).toContain('99');
    expect(
      (await admin('POST', 'scalesets', { owner: { org: 'octo' }, name: 'x', labels: 'linux' })).status,
    ).toBe(400);
    expect((await admin('POST', 'scalesets', { owner: { org: 'octo' } })).status).toBe(400);
    expect((await admin('GET', 'scalesets/4242')).status).toBe(404);
    expect(sim.scaleSets().map((s) => s.name)).toEqual(['taken']);
  });

  it('queues jobs by labels, which a matching scale set with a session is offered, and lists them by state', async () => {
    const ss = sim.createScaleSet({ org: 'octo' }, { name: 'builders', labels: ['linux', 'x64'] });
    const other = sim.createScaleSet({ org: 'octo' }, { name: 'others', labels: ['windows'] });
    const linux = obj(await admin('POST', 'jobs', { repo: 'octo/hello', labels: ['linux'] }));
    const windows = obj(await admin('POST', 'jobs', { repo: 'octo/hello', labels: ['windows'] }));
    expect(linux).toMatchObject({ state: 'queued', labels: ['linux'], repo: 'octo/hello' });

    const queued = (await admin('GET', 'jobs?state=queued')).json as Array<{ jobId: string }>;
    expect(queued.map((j) => j.jobId).sort()).toEqual([linux.jobId, windows.jobId].sort());

    const conn = await connectAdmin(sim);
    await createSession(conn, ss.id);
    const offered = (await admin('GET', `jobs?state=available&scaleSetId=${ss.id}`)).json;
    expect(offered).toEqual([expect.objectContaining({ jobId: linux.jobId, scaleSetId: ss.id })]);
    expect((await admin('GET', `jobs?scaleSetId=${other.id}`)).json).toEqual([]);
    expect((await admin('GET', 'jobs?state=waiting')).status).toBe(400);
  });

  it('lists runners by scale set and status', async () => {
    const a = sim.createScaleSet({ org: 'octo' }, { name: 'set-a' });
    const b = sim.createScaleSet({ org: 'octo' }, { name: 'set-b' });
    const conn = await connectAdmin(sim);
    await generateJit(conn, a.id, 'a-1');
    await generateJit(conn, a.id, 'a-2');
    await generateJit(conn, b.id, 'b-1');
    await admin('POST', 'runners/a-2/connect');

    const names = async (query: string) =>
      ((await admin('GET', `runners${query}`)).json as Array<{ name: string }>).map((r) => r.name).sort();
    expect(await names('')).toEqual(['a-1', 'a-2', 'b-1']);
    expect(await names(`?scaleSetId=${a.id}`)).toEqual(['a-1', 'a-2']);
    expect(await names(`?scaleSetId=${a.id}&status=idle`)).toEqual(['a-2']);
    expect(await names('?status=offline')).toEqual(['a-1', 'b-1']);
    expect((await admin('GET', 'runners?status=asleep')).status).toBe(400);
    expect((await admin('GET', 'runners?scaleSetId=first')).status).toBe(400);
  });
});
