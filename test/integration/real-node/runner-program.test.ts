import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { type AddressInfo, type Socket, connect, createServer } from 'node:net';
import { ActionsServiceClient } from '@aro/actions';
import { silentLogger } from '@aro/observability';
import { Registry } from 'prom-client';
import { DEFAULT_PAT, type RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { waitFor } from '../../harness/wait-for';

/*
 * The runner image's program (test/harness/node/runner-program.ts), run here as a plain process against
 * the simulator, through a relay that can stop answering. On the real node, 1 of 20 jobs once stayed
 * running for good: its runner gave up on one call the simulator answered late (the simulator lives in
 * the test's own process, which a loaded machine stalls), exited 1 without reporting, and the service
 * then held the job, and the registration busy, with no runner left to finish either. The controller
 * did what upstream's reconciler says (deleted the runner that had a job and a failed pod, queued the removal, which
 * the service refuses while the job runs). A real runner rides out such a stall, and so must this one.
 */

const RUNNER_PROGRAM = join(__dirname, '../../harness/node/runner-program.ts');
/** Longer than the program's 10 s per-call timeout: one call must time out at least once. */
const STALL_MS = 15_000;

/** A TCP relay to `target` that, while held, forwards nothing in either direction (bytes wait). */
class StallingRelay {
  private held = false;
  private readonly waiting: (() => void)[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((inbound) => this.pipe(inbound, this.target()));
  port = 0;

  private constructor(private readonly target: () => number) {}

  static async start(target: () => number): Promise<StallingRelay> {
    const relay = new StallingRelay(target);
    relay.server.listen(0, '127.0.0.1');
    await once(relay.server, 'listening');
    relay.port = (relay.server.address() as AddressInfo).port;
    return relay;
  }

  private pipe(inbound: Socket, port: number): void {
    const outbound = connect({ host: '127.0.0.1', port });
    for (const s of [inbound, outbound]) {
      this.sockets.add(s);
      s.on('error', () => undefined).on('close', () => {
        this.sockets.delete(s);
        inbound.destroy();
        outbound.destroy();
      });
    }
    const forward = (from: Socket, to: Socket): void => {
      from.on('data', (chunk: Buffer) => {
        if (this.held) this.waiting.push(() => to.write(chunk));
        else to.write(chunk);
      });
    };
    forward(inbound, outbound);
    forward(outbound, inbound);
  }

  hold(): void {
    this.held = true;
  }

  release(): void {
    this.held = false;
    for (const send of this.waiting.splice(0)) send();
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('The runner image program', () => {
  let sim: RunningSimulator;
  let relay: StallingRelay;
  let client: ActionsServiceClient;

  beforeAll(async () => {
    let simPort = 0;
    relay = await StallingRelay.start(() => simPort);
    // The JIT config names the relay, so every call the program makes goes through it.
    sim = await startSimulator({ publicUrl: `http://127.0.0.1:${relay.port}` });
    simPort = sim.port;
    client = new ActionsServiceClient({
      configUrl: sim.configUrl({ org: 'octo' }),
      credentials: { kind: 'pat', token: DEFAULT_PAT },
      logger: silentLogger,
      registry: new Registry(),
      requestTimeoutMs: 10_000,
    });
  });

  afterAll(async () => {
    await client?.close();
    await sim?.stop();
    await relay?.stop();
  });

  it('finishes its job, reports it and deregisters when the service stalls mid-job past a call timeout', async () => {
    const scaleSet = await client.createRunnerScaleSet({ name: 'stall', runnerGroupId: 1 });
    const { runner, encodedJITConfig } = await client.generateJitRunnerConfig(
      { name: 'stall-1' },
      scaleSet.id,
    );
    const child = spawn(
      process.execPath,
      ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON', RUNNER_PROGRAM],
      {
        env: { ...process.env, ACTIONS_RUNNER_INPUT_JITCONFIG: encodedJITConfig },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    try {
      await waitFor(() => sim.runner(runner.name)?.status === 'idle' || child.exitCode !== null, {
        description: `runner ${runner.name} connected`,
      });
      expect({ exitCode: child.exitCode, output }).toEqual({ exitCode: null, output: expect.anything() });
      // The job runs 4 s; the stall begins while it runs, so its next call (reading the job before
      // completing it) is the one that waits.
      const job = sim.assignJobToRunner(runner.name, { displayName: 'sleep=4' });
      await waitFor(() => sim.job(job.jobId)?.state === 'running', { description: 'the job running' });
      relay.hold();
      await new Promise((resolve) => setTimeout(resolve, STALL_MS));
      expect(sim.job(job.jobId)?.state).toBe('running');
      relay.release();

      const [code] = await exited;
      expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' });
      expect(output).toContain('trying again');
      expect(sim.job(job.jobId)).toMatchObject({ state: 'completed', result: 'succeeded' });
      // Exit 0 deregistered it: nothing for the controller to remove, nothing busy left.
      expect(sim.runner(runner.name)).toBeUndefined();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
