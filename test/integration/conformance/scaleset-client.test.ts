// Upstream's own Actions client (github.com/actions/scaleset v0.4.0, what ARC imports) against the
// simulator: the Go program in test/conformance drives every call upstream's controller and listener
// make, in their order, and exits non-zero at the first answer upstream would not accept.
import { execFile } from 'node:child_process';
import { RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { findConformanceProgram } from '../../harness/conformance-program';

// The first build downloads the upstream module (CI builds it beforehand, in .ci/run).
jest.setTimeout(600_000);

/** Each FAIL line with the line after it, which says what upstream's client returned. */
function failures(output: string): string[] {
  const lines = output.split('\n');
  return lines.flatMap((line, i) => (line.startsWith('FAIL') ? [`${line}\n${lines[i + 1] ?? ''}`] : []));
}

interface ProgramRun {
  exitCode: number;
  output: string;
}

function runProgram(program: string, simulatorUrl: string): Promise<ProgramRun> {
  return new Promise((resolve, reject) => {
    execFile(
      program,
      ['-simulator', simulatorUrl],
      { timeout: 300_000, maxBuffer: 4 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (err && typeof err.code !== 'number')
          return reject(new Error(`${program}: ${err.message}\n${output}`));
        resolve({ exitCode: err ? Number(err.code) : 0, output });
      },
    );
  });
}

describe("conformance: upstream's scaleset client against the simulator", () => {
  let program: string;
  let sim: RunningSimulator;

  beforeAll(async () => {
    program = await findConformanceProgram((line) => process.stderr.write(`[conformance] ${line}\n`));
  });

  beforeEach(async () => {
    sim = await startSimulator();
  });

  afterEach(() => sim.stop());

  it('passes every step of the controller and listener protocol', async () => {
    const run = await runProgram(program, sim.url);
    // On a failure the diff shows the FAIL line, which names the step, and what the client returned.
    expect({
      exitCode: run.exitCode,
      failed: failures(run.output),
    }).toEqual({
      exitCode: 0,
      failed: [],
    });
    expect(run.output).toMatch(/^PASS \d+ steps/m);
    expect(run.output).toMatch(/^ok +\d+ remove: an already removed runner answers 204/m);

    // What the simulator holds afterwards: the removals went through, and nothing leaked.
    expect(sim.callCount('DELETE agents/{id}')).toBeGreaterThanOrEqual(6);
    expect(sim.registrations()).toEqual([]);
    expect(sim.sessions()).toEqual([]);
    expect(sim.scaleSets()).toEqual([]);
  });

  it('stops at the first mismatch and names it', async () => {
    // Every runner removal answered 404 as if the registration were unknown: the first step that
    // removes a runner (the name-taken recovery) must fail, and no later step may run.
    sim.injectFault({ route: 'DELETE agents/{id}', status: 404 });
    const run = await runProgram(program, sim.url);
    expect(run.exitCode).toBe(1);
    expect(failures(run.output)).toEqual([expect.stringContaining('name-taken recovery')]);
    expect(run.output).toContain('404');
    expect(run.output).not.toMatch(/^PASS/m);
    expect(run.output).not.toContain('session: create');
  });
});
