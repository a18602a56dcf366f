import { existsSync } from 'node:fs';
import { processExists } from '../../harness';
import { parseSandboxOptions } from '../../sandbox/options';
import { renderReport, runSandbox, type SandboxReport } from '../../sandbox/sandbox';

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

/** What the uninstall bug described below leaves behind, and what the controller logs meanwhile. */
const KNOWN_STUCK = ['Role/sandbox-aro-rs-manager', 'AutoscalingRunnerSet/sandbox'];
const KNOWN_UNINSTALL_REFUSAL =
  /^(get|patch) (Role\.rbac\.authorization\.k8s\.io|RoleBinding\.rbac\.authorization\.k8s\.io|ServiceAccount|Secret) arc-runners\/sandbox-aro-rs-[a-z-]+ failed: .* is forbidden: /;

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
function expectChartIdentities(report: SandboxReport): void {
  expect(report.identities).toContainEqual({
    who: 'controller',
    user: 'system:serviceaccount:arc-systems:aro-controller',
    mayCreateNamespaces: false,
  });
  const listeners = report.identities.filter((i) => i.who === 'listener');
  expect(listeners.length).toBeGreaterThanOrEqual(1);
  for (const listener of listeners) {
    expect(listener.user).toMatch(/^system:serviceaccount:arc-systems:sandbox-[0-9a-f]+-listener$/);
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
  }, 900_000);

  it('runs every job to success, one runner per job, with live progress', () => {
    expect(report).toMatchObject({ jobs: 20, succeeded: 20, failed: 0, unfinished: 0 });
    // A runner takes one job and is gone: one EphemeralRunner per job, never fewer.
    expect(report.runnersSeen).toBeGreaterThanOrEqual(20);
    // One registration per runner at least: the product's promise on Actions calls, within reason.
    expect(report.actionsCalls).toBeGreaterThanOrEqual(20);
    expect(report.kubeWrites).toBeGreaterThan(0);
    expect(output).toMatch(/jobs 20: queued \d+, running \d+, done \d+, failed \d+/);
    expect(output).toMatch(/leader: aro-controller-[01]/);
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
   * Known product bug, found by the sandbox: with the charts' RBAC, `helm uninstall` of a scale set
   * usually leaves the AutoscalingRunnerSet and its manager Role behind for good. The controller releases
   * the chart's protected objects in upstream's order, the manager RoleBinding before the manager Role;
   * once the binding is gone it may no longer get or patch the Role, nor read the others on a retry (the
   * aro-controller ClusterRole grants roles and serviceaccounts only list and watch), so the Role keeps
   * its finalizer and the set its own. Whether the Role's patch beats the apiserver's RBAC cache is a
   * race, so a run may also end clean. Until the chart (or the controller) is fixed this test tolerates
   * exactly that bug's traces and nothing else: any other refusal, in the workload or the uninstall, or
   * any other object left, fails it. Once fixed, expect both lists empty.
   */
  it("meets no RBAC refusal and leaves no chart object but the known uninstall bug's", () => {
    expect(report.chartObjectsLeft.filter((o) => !KNOWN_STUCK.includes(o))).toEqual([]);
    expect(report.refusals.filter((r) => !KNOWN_UNINSTALL_REFUSAL.test(r))).toEqual([]);
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
    expect(report.refusals.filter((r) => !KNOWN_UNINSTALL_REFUSAL.test(r))).toEqual([]);
    expectNothingLeft(report);
  });
});
