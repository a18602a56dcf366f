import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RunningSimulator } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import { ListenerFixture, listenerFixture, startListenerTestSimulator } from './fixture';

const root = resolve(__dirname, '..', '..', '..');

/** The real listener process (apps/listener/src/main.ts), as the pod runs it. */
describe('The listener process', () => {
  let sim: RunningSimulator;
  let fx: ListenerFixture | undefined;
  let child: ChildProcess | undefined;
  let dir: string | undefined;

  beforeAll(async () => {
    sim = await startListenerTestSimulator();
  });
  afterAll(async () => {
    await sim?.stop();
  });
  afterEach(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    if (dir) rmSync(dir, { recursive: true, force: true });
    await fx?.stopAll();
    fx = undefined;
  });

  it('scales from config.json and KUBECONFIG, and deletes its session on SIGTERM before exiting 0', async () => {
    fx = await listenerFixture(sim, { minRunners: 2 });
    dir = mkdtempSync(join(tmpdir(), 'aro-listener-process-'));
    const configPath = join(dir, 'config.json');
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(
      configPath,
      JSON.stringify({ ...fx.config, metrics_addr: '127.0.0.1:0', log_level: 'debug' }),
    );
    // The listener's own Role only (patch the set, patch runners and their status), as in its pod.
    writeFileSync(kubeconfigPath, fx.listenerKubeConfig.exportConfig());
    let output = '';
    child = spawn(process.execPath, ['-r', '@swc-node/register', 'apps/listener/src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        LISTENER_CONFIG_PATH: configPath,
        KUBECONFIG: kubeconfigPath,
        POD_NAME: 'listener-pod-x',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((done) => child!.once('exit', (code) => done(code)));

    const session = await waitFor(() => sim.sessions().find((s) => s.scaleSetId === fx!.scaleSetId), {
      description: 'the process to open a session',
      timeoutMs: 60_000,
    });
    expect(session.ownerName).toBe('listener-pod-x');
    await fx.waitForSpec((s) => s.replicas === 2, 'replicas = minRunners from config.json');
    const deletesBefore = sim.callCount('DELETE runnerscalesets/{id}/sessions/{sessionId}');

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(sim.sessions().filter((s) => s.scaleSetId === fx!.scaleSetId)).toEqual([]);
    expect(sim.callCount('DELETE runnerscalesets/{id}/sessions/{sessionId}')).toBe(deletesBefore + 1);
    expect(output).toContain('Deleted the message session');
  });
});
