import { existsSync } from 'node:fs';
import { processExists } from '../../harness';
import { parseSandboxOptions } from '../../sandbox/options';
import { renderReport, runSandbox, type SandboxReport } from '../../sandbox/sandbox';
import { scaled } from '../../harness/time-scale';

/** Jest's bound on one sandbox run (control plane, charts, workload, uninstall), at the run's time scale. */
jest.setTimeout(scaled(900_000));

jest.setTimeout(900_000);

async function run(args: string[]): Promise<{ report: SandboxReport; output: string }> {
  let output = '';
  const out = {
    write(chunk: string | Uint8Array): boolean {
      output += chunk.toString();
      return true;
    },
  } as NodeJS.WritableStream;
  const report = await runSandbox(parseSandboxOptions(args), {
    out,
    tty: false,
    signal: new AbortController().signal,
  });
  process.stderr.write(`${output}${renderReport(report)}`);
  return { report, output };
}

/** What every run must end with: nothing left on the service, in the cluster or on the machine. */
function expectNothingLeft(report: SandboxReport): void {
  expect(report).toMatchObject({
    registrationsLeft: 0,
    podsLeft: 0,
    secretsLeft: 0,
    processesLeft: 0,
    tempFoldersLeft: 0,
    aborted: false,
  });
  // Checked here as well as in the report: each process and folder the run says it made is gone.
  expect(report.pids.filter((pid) => processExists(pid))).toEqual([]);
  expect(report.folders.filter((f) => existsSync(f))).toEqual([]);
}

/**
 * The product as the charts deploy it: the controllers and the listener ran as the charts' service
 * accounts (not the admin, who may create namespaces), and did the whole job with those rights.
 */
function expectChartIdentities(
  report: SandboxReport,
  listenerUser = /^system:serviceaccount:arc-systems:sandbox-[0-9a-f]+-listener$/,
): void {
  expect(report.identities).toContainEqual({
    who: 'controller',
    user: 'system:serviceaccount:arc-systems:arc-gha-rs-controller',
    mayCreateNamespaces: false,
  });
  const listeners = report.identities.filter((i) => i.who === 'listener');
  expect(listeners.length).toBeGreaterThanOrEqual(1);
  for (const listener of listeners) {
    expect(listener.user).toMatch(listenerUser);
    expect(listener.mayCreateNamespaces).toBe(false);
  }
}

/**
 * `npm run sandbox` with a small workload, as a user would run it, asserting on its summary. Each run
 * has its own control plane, simulator, two controller processes and the listener: the slowest suite
 * there is, so each workload runs once and several tests read its report.
 */
describe('npm run sandbox -- --jobs 20', () => {
  let report: SandboxReport;
  let output: string;
  beforeAll(async () => {
    ({ report, output } = await run([
      '--jobs',
      '20',
      '--rate',
      '4',
      '--max-runners',
      '5',
      '--duration',
      '1',
    ]));
  });

  it('runs every job to success, one runner per job, with live progress', () => {
    expect(report).toMatchObject({ jobs: 20, succeeded: 20, failed: 0, unfinished: 0 });
    // A runner takes one job and is gone: one EphemeralRunner per job, never fewer.
    expect(report.runnersSeen).toBeGreaterThanOrEqual(20);
    // One registration per runner at least: the product's promise on Actions calls, within reason.
    expect(report.actionsCalls).toBeGreaterThanOrEqual(20);
    expect(report.kubeWrites).toBeGreaterThan(0);
    expect(output).toMatch(/jobs 20: queued \d+, running \d+, done \d+, failed \d+/);
    expect(output).toMatch(/leader: aro-controller-[01]/);
    // The controllers' PIDs, as the listeners' are: a person driving --keep from outside needs them.
    expect(output).toMatch(
      /controllers up: aro-controller-0 :\d+ \(pid \d+\), aro-controller-1 :\d+ \(pid \d+\)/,
    );
  });

  it('installs both charts and runs the controllers and the listener as their service accounts', () => {
    expect(output).toContain('installed charts/aro-controller');
    expect(output).toMatch(/installed charts\/aro-scale-set .*AutoscalingRunnerSet\/sandbox/);
    expectChartIdentities(report);
  });

  it('leaves nothing on the service, in the cluster or on the machine', () => {
    expectNothingLeft(report);
    expect(report.pids.length).toBeGreaterThanOrEqual(6);
  });

  /*
   * Found by the sandbox, fixed: with the charts' RBAC, `helm uninstall` of a scale set left the
   * AutoscalingRunnerSet and its manager Role behind for good. The controller releases the chart's
   * protected objects with the manager RoleBinding and Role last; once the binding is gone its rights in
   * the namespace are gone, so the Role's finalizer is lifted through the aro-controller chart's own
   * get/patch on roles, and a retry no longer re-reads the objects it released before (now refused).
   * Whether the uninstall races the RBAC cache varies from run to run, so the chaos run checks it too.
   */
  it('meets no RBAC refusal and leaves no chart object after helm uninstall', () => {
    expect(report.chartObjectsLeft).toEqual([]);
    expect(report.refusals).toEqual([]);
  });
});

describe('npm run sandbox -- --jobs 20 --chaos', () => {
  it('survives the loss of the leader and the listener', async () => {
    const { report, output } = await run([
      '--jobs',
      '20',
      '--rate',
      '4',
      '--max-runners',
      '5',
      '--duration',
      '1',
      '--chaos',
    ]);
    expect(report.chaos.join('\n')).toMatch(/killed the leader[\s\S]*killed the listener/);
    expect(output).toMatch(/leader changed: aro-controller-[01] -> aro-controller-[01]/);
    expect(report).toMatchObject({ succeeded: 20, failed: 0, unfinished: 0 });
    expect(report.runnersSeen).toBeGreaterThanOrEqual(20);
    expectChartIdentities(report);
    expect(report.refusals).toEqual([]);
    expect(report.chartObjectsLeft).toEqual([]);
    expectNothingLeft(report);
  });
});

/*
 * listener.mode shared: no listener pod; the chart's shared listener Deployment (two replicas) serves
 * the scale set as the chart's shared listener account, and --chaos kills the replica holding the
 * session (the standby takes it over once the service expires it).
 */
describe('npm run sandbox -- --jobs 20 --listener-mode shared --chaos', () => {
  it('runs every job with the shared listener, survives the loss of the leader and of the session holder', async () => {
    const { report, output } = await run(
      '--jobs 20 --rate 4 --max-runners 5 --duration 1 --listener-mode shared --chaos'.split(' '),
    );
    expect(output).toMatch(/shared listener up: arc-gha-rs-controller-shared-listener-0 \(pid \d+\)/);
    expect(report.chaos.join('\n')).toMatch(
      /killed the leader[\s\S]*killed the shared listener replica arc-gha-rs-controller-shared-listener-[01] holding the session/,
    );
    expect(report).toMatchObject({ succeeded: 20, failed: 0, unfinished: 0 });
    expectChartIdentities(
      report,
      /^system:serviceaccount:arc-systems:arc-gha-rs-controller-shared-listener$/,
    );
    expect(report.refusals).toEqual([]);
    expect(report.chartObjectsLeft).toEqual([]);
    expectNothingLeft(report);
  });
});
