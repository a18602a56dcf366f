import { existsSync } from 'node:fs';
import { processExists } from '../../harness';
import { detectCapabilities, describeSeams, scaleSetMode } from '../../sandbox/capabilities';
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

/**
 * `npm run sandbox` with a small workload, as a user would run it, asserting on its summary: every job
 * succeeded, nothing left on the service or in the cluster, no process or folder left behind. It runs
 * its own control plane, simulator and two controller processes, so it is the slowest suite there is.
 */
describe('npm run sandbox', () => {
  it('runs a small workload in whatever mode this build supports, and leaves nothing behind', async () => {
    const { report, output } = await run([
      '--jobs',
      '8',
      '--rate',
      '2',
      '--max-runners',
      '4',
      '--duration',
      '1',
    ]);
    expect(report).toMatchObject({
      jobs: 8,
      succeeded: 8,
      failed: 0,
      unfinished: 0,
      registrationsLeft: 0,
      podsLeft: 0,
      secretsLeft: 0,
      processesLeft: 0,
      tempFoldersLeft: 0,
      aborted: false,
    });
    // One registration per runner that ran: the product's promise on Actions calls, within reason.
    expect(report.actionsCalls).toBeGreaterThanOrEqual(8);
    expect(report.kubeWrites).toBeGreaterThan(0);
    expect(output).toMatch(/jobs 8: queued \d+, running \d+, done \d+, failed \d+/);
    expect(output).toMatch(/leader: aro-controller-[01]/);
    for (const seam of describeSeams(await detectCapabilities())) expect(output).toContain(seam);
    // Checked here as well as in the report: each process and folder the run says it made is gone.
    expect(report.pids.length).toBeGreaterThanOrEqual(5);
    expect(report.pids.filter((pid) => processExists(pid))).toEqual([]);
    expect(report.folders.filter((f) => existsSync(f))).toEqual([]);
  });

  it('in scale-set mode, 20 jobs survive the loss of the leader and the listener', async () => {
    const capabilities = await detectCapabilities();
    if (!scaleSetMode(capabilities)) {
      process.stderr.write(
        `SKIPPED (scale-set mode needs the listener and the scale-set controllers on this branch): ${describeSeams(capabilities).join('; ')}\n`,
      );
      return;
    }
    const { report } = await run([
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
    expect(report.mode).toBe('scale-set');
    expect(report.chaos.join('\n')).toMatch(/killed the leader[\s\S]*killed the listener/);
    expect(report).toMatchObject({
      succeeded: 20,
      failed: 0,
      unfinished: 0,
      registrationsLeft: 0,
      podsLeft: 0,
      secretsLeft: 0,
      processesLeft: 0,
      tempFoldersLeft: 0,
    });
  });
});
