import { renderReport, type SandboxReport } from '../../sandbox/report';

/** The summary a real-node run prints: figures it did not take must not read as measured zeros. */
describe('the sandbox summary', () => {
  const report: SandboxReport = {
    wallMs: 141_000,
    jobs: 40,
    succeeded: 40,
    failed: 0,
    unfinished: 0,
    queueWaitP50Ms: 64_000,
    queueWaitP95Ms: 96_000,
    runnerLifecycleP50Ms: 0,
    runnerLifecycleP95Ms: 0,
    runnersSeen: 40,
    kubeWrites: 0,
    actionsCalls: 0,
    registrationsLeft: 0,
    podsLeft: 0,
    secretsLeft: 0,
    podsAndSecretsLeft: [],
    chartObjectsLeft: [],
    identities: [],
    refusals: [],
    processesLeft: 0,
    tempFoldersLeft: 0,
    chaos: [],
    aborted: false,
    pids: [],
    folders: [],
  };
  const row = (text: string, name: string): string | undefined =>
    text.split('\n').find((line) => line.startsWith(name));

  it('says "not measured" with the reason where a run did not take a figure', () => {
    const text = renderReport({ ...report, notMeasured: 'the pods run on the node' });
    for (const name of [
      'runner lifecycle',
      'Kubernetes writes',
      'Actions calls',
      'controllers ran as',
      'RBAC refusals',
      'scale-set chart objects left',
    ]) {
      expect(row(text, name)).toMatch(/\(not measured: the pods run on the node\)$/);
    }
    // What the run did take stays a figure.
    expect(row(text, 'registrations left on the service')).toMatch(/\| 0$/);
    expect(row(text, 'jobs done')).toMatch(/40 of 40$/);
  });

  it('prints the figures of a run that took them', () => {
    const text = renderReport(report);
    expect(row(text, 'RBAC refusals in their logs')).toMatch(/\| 0$/);
    expect(row(text, 'Kubernetes writes per job')).toMatch(/0\.00 \(0 in all\)$/);
  });
});
