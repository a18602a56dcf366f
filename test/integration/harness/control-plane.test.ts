import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { ControlPlane, controlPlaneInfo, processExists, testKubeConfig, waitFor } from '../../harness';
import { findControlPlaneBinaries } from '../../harness/binaries';

/** Pids of every process whose command line mentions `path`: what a leaked etcd or apiserver would show. */
function processesMentioning(path: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path);
      } catch {
        return false; // exited while we looked
      }
    })
    .map(Number);
}

// jest ignores `testTimeout` inside a `projects` entry, so the integration project's 120 s does not apply.
jest.setTimeout(120_000);

function pidsOf(info: ReturnType<typeof controlPlaneInfo>): number[] {
  return [info.pids.etcd, info.pids.kubeApiserver, info.pids.kubeControllerManager, info.pids.reaper].filter(
    (pid): pid is number => pid !== undefined,
  );
}

describe('the control plane of this jest run', () => {
  it('keeps etcd, kube-apiserver, kube-controller-manager and the reaper running while tests run', () => {
    const info = controlPlaneInfo();
    for (const pid of pidsOf(info)) {
      expect({ pid, alive: processExists(pid) }).toEqual({ pid, alive: true });
    }
    expect(existsSync(info.kubeconfigPath)).toBe(true);
    expect(info.garbageCollector).toBe(info.pids.kubeControllerManager !== undefined);
  });

  it('answers as the admin user from the kubeconfig it exported', async () => {
    const namespaces = await testKubeConfig().makeApiClient(CoreV1Api).listNamespace();
    expect(namespaces.items.map((ns) => ns.metadata?.name)).toEqual(
      expect.arrayContaining(['default', 'kube-system']),
    );
  });
});

describe('a second, separately started control plane', () => {
  it('leaves no process and no run folder behind once stopped', async () => {
    const plane = await ControlPlane.start({ log: () => undefined });
    const info = plane.info;
    let stopped = false;
    try {
      expect(pidsOf(info).every(processExists)).toBe(true);
      expect(processesMentioning(info.runDir).length).toBeGreaterThan(0);
      const version = await plane.kubeConfig().makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
      expect(version.metadata?.name).toBe('default');
      await plane.stop();
      stopped = true;
      expect(pidsOf(info).filter(processExists)).toEqual([]);
      expect(processesMentioning(info.runDir)).toEqual([]);
      expect(existsSync(info.runDir)).toBe(false);
    } finally {
      if (!stopped) {
        await plane.stop();
      }
    }
  });

  it('cleans up after a failed start and reports the log of the process that failed', async () => {
    const found = await findControlPlaneBinaries(() => undefined);
    const failing = ControlPlane.start({
      log: () => undefined,
      binaries: { ...found, etcd: { path: '/bin/false', source: 'test' } },
    });
    await expect(failing).rejects.toThrow(
      /etcd exited \(code 1, signal null\) before etcd to report healthy/,
    );
    const message = await failing.catch((err: Error) => err.message);
    const runDir = /last lines of etcd \((.*)\/etcd\.log\)/.exec(String(message))?.[1];
    expect(runDir).toBeDefined();
    expect(existsSync(runDir!)).toBe(false);
    expect(processesMentioning(runDir!)).toEqual([]);
  });

  it('cleans up after a binary that cannot be started at all', async () => {
    const found = await findControlPlaneBinaries(() => undefined);
    const before = new Set(readdirSync(tmpdir()).filter((entry) => entry.startsWith('aro-control-plane-')));
    const message = await ControlPlane.start({
      log: () => undefined,
      binaries: { ...found, kubeApiserver: { path: '/nonexistent/kube-apiserver', source: 'test' } },
    }).then(
      () => 'started',
      (err: Error) => err.message,
    );
    expect(message).toMatch(/Could not start kube-apiserver \(\/nonexistent\/kube-apiserver\): .*ENOENT/);
    const runDir = /last lines of etcd \((.*)\/etcd\.log\)/.exec(message)?.[1];
    expect(runDir).toBeDefined();
    expect(before.has(basename(runDir!))).toBe(false);
    expect(existsSync(runDir!)).toBe(false);
    expect(processesMentioning(runDir!)).toEqual([]);
  });

  it('is cleaned up by its reaper when the process that started it is killed with SIGKILL', async () => {
    const starter = spawn(
      process.execPath,
      ['-r', '@swc-node/register', resolve(__dirname, 'fixtures', 'start-and-hang.ts')],
      { cwd: resolve(__dirname, '..', '..', '..'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    starter.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    starter.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      const infoPath = await waitFor(() => /^CONTROL_PLANE=(.*)$/m.exec(stdout)?.[1], {
        description: `the child to print its control plane (stderr so far: ${stderr.slice(-500)})`,
        timeoutMs: 90_000,
      });
      const info = ControlPlane.readInfo(infoPath);
      expect(pidsOf(info).every(processExists)).toBe(true);
      starter.kill('SIGKILL');
      await waitFor(() => pidsOf(info).every((pid) => !processExists(pid)) && !existsSync(info.runDir), {
        description: `every process of ${info.runDir} to be gone and the folder removed after the starter died`,
        timeoutMs: 30_000,
        intervalMs: 250,
      });
      expect(processesMentioning(info.runDir)).toEqual([]);
      expect(existsSync(join(info.runDir, 'kubeconfig'))).toBe(false);
    } finally {
      starter.kill('SIGKILL');
    }
  });
});
