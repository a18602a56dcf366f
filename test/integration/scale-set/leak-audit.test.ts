import { execFileSync } from 'node:child_process';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { FIRST_AUDIT_DELAY_MS, OrphanRegistrationSweep } from '@aro/controllers';
import { controlPlaneInfo, runnerContainerRunning, waitFor } from '../../harness';
import {
  GITHUB_SECRET,
  ScaleSetFixture,
  runnerPodTemplate,
  scaleSetSuite,
  serviceClient,
  runnerPod,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

/** `kubectl describe`, when kubectl is on the PATH: what a person on call reads. */
function kubectlDescribe(namespace: string, name: string): string | undefined {
  try {
    return execFileSync(
      'kubectl',
      [
        '--kubeconfig',
        process.env.ARO_TEST_KUBECONFIG ?? controlPlaneInfo().kubeconfigPath,
        'describe',
        'autoscalingrunnerset',
        '-n',
        namespace,
        name,
      ],
      { encoding: 'utf8' },
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      process.stderr.write('leak-audit.test: kubectl not on PATH; the describe output is not checked\n');
      return undefined;
    }
    throw err;
  }
}

/** An AutoscalingRunnerSet with one runner registered on its scale set; its name and the runner's. */
async function scaleSetWithRegisteredRunner(
  f: ScaleSetFixture,
): Promise<{ name: string; runnerName: string }> {
  const name = uniqueName('leak');
  await f.kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'AutoscalingRunnerSet',
    metadata: { name, namespace: f.namespace },
    spec: {
      githubConfigUrl: f.configUrl,
      githubConfigSecret: GITHUB_SECRET,
      minRunners: 0,
      maxRunners: 2,
      template: { spec: runnerPodTemplate() },
    },
  });
  // The listener (not running here) would scale the set to minRunners; the test does.
  const runnerSet = await waitFor(async () => (await f.list<EphemeralRunnerSet>(EphemeralRunnerSetKind))[0], {
    description: 'the EphemeralRunnerSet',
  });
  await f.scale(runnerSet.metadata!.name!, 1, 1);
  const [runner] = await waitForRunners(f, runnerSet.metadata!.name!, (r) => r.length === 1, 'a runner');
  const runnerName = runner.metadata!.name!;
  await waitFor(() => runnerPod(f, runnerName), { description: 'its pod' });
  await runnerContainerRunning(f.namespace, runnerName);
  await waitForRunners(
    f,
    runnerSet.metadata!.name!,
    (r) => (r[0]?.status?.runnerId ?? 0) > 0,
    'the runner registered',
  );
  return { name, runnerName };
}

describe('Leak audit in the AutoscalingRunnerSet status', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  it('reports registrations vs runners, the orphan found and removed, and writes nothing when a pass changes nothing', async () => {
    f = await suite.start({ unregistration: { orphanGraceMs: 0 } });
    const { name, runnerName } = await scaleSetWithRegisteredRunner(f);
    // Its first audit (a pass of its own, soon after it entered the ledger) comes before the leak, so
    // that the passes below are the only ones that can see the leak.
    await waitFor(
      async () => (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.orphanSweep,
      { description: `the first leak audit of ${name}`, timeoutMs: FIRST_AUDIT_DELAY_MS + 20_000 },
    );
    const ars = await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
    const scaleSetId = Number(ars!.metadata!.annotations![Annotations.runnerScaleSetId]);

    // The leak: a registration on the scale set that no EphemeralRunner holds.
    const orphan = await serviceClient(f.sim).generateJitRunnerConfig(
      { name: 'leaked-registration', workFolder: '' },
      scaleSetId,
    );
    const sweep = f.app.get(OrphanRegistrationSweep);
    expect(await sweep.sweepOnce()).toBe(1);
    await waitFor(() => f.sim.runner('leaked-registration') === undefined, {
      description: `the orphan ${orphan.runner.id} removed from the service`,
    });
    expect(f.sim.runner(runnerName)).toBeDefined();
    const found = (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))!.status?.orphanSweep;
    expect(found).toMatchObject({ registrations: 2, runners: 1, orphans: 1, orphansRemoved: 1 });
    expect(Date.parse(found!.lastPassTime!)).toBeGreaterThan(Date.now() - 60_000);

    // The next pass sees the service and the cluster agree; the total of removals stays.
    expect(await sweep.sweepOnce()).toBe(0);
    const clean = (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))!.status?.orphanSweep;
    expect(clean).toMatchObject({ registrations: 1, runners: 1, orphans: 0, orphansRemoved: 1 });
    // The same figures as the leader's gauges (the dashboard's leak audit panel).
    const gauge = async (metric: string) =>
      (await f.registry.getSingleMetric(metric)?.get())?.values.find((v) => v.labels.name === name)?.value;
    expect(await gauge('aro_orphan_sweep_registrations')).toBe(1);
    expect(await gauge('aro_orphan_sweep_runners')).toBe(1);
    expect(await gauge('aro_orphan_sweep_orphans')).toBe(0);

    // A pass that changes nothing writes nothing: the recorded pass stays the one before.
    expect(await sweep.sweepOnce()).toBe(0);
    const again = (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))!.status?.orphanSweep;
    expect(again).toEqual(clean);

    const described = kubectlDescribe(f.namespace, name);
    if (described !== undefined) {
      expect(described).toMatch(/Orphan Sweep:/);
      expect(described).toMatch(/Orphans Removed:\s+1/);
      expect(described).toMatch(/Registrations:\s+1/);
      process.stdout.write(described.slice(described.indexOf('Status:')));
    }
  });

  it('gives a new scale set its first audit within the first-audit delay, not a sweep interval later', async () => {
    // The fixture's sweep interval is an hour and its pass at election ran before the set existed: only
    // the first audit of a new scale set can explain an audit within seconds. The grace is the fixture's
    // hour too, so nothing young could be taken for an orphan.
    f = await suite.start();
    const { name, runnerName } = await scaleSetWithRegisteredRunner(f);
    // The set entered the ledger just before its runner registered; its first audit is due within
    // FIRST_AUDIT_DELAY_MS of that, plus one pass (a few calls) on a loaded machine.
    const audit = await waitFor(
      async () => (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.orphanSweep,
      { description: `the first leak audit of ${name}`, timeoutMs: FIRST_AUDIT_DELAY_MS + 20_000 },
    );
    expect(audit).toMatchObject({ registrations: 1, runners: 1, orphans: 0, orphansRemoved: 0 });
    expect(f.sim.runner(runnerName)).toBeDefined();
  });
});
