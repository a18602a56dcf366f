import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodeCgroup, nodeCgroupName, removeNodeCgroup } from '../../harness/node/node-cgroups';
import { sweepEarlierRuns } from '../../harness/node/node-processes';
import { describeOnRealNode } from './availability';

/*
 * What a crashed run leaves (node-processes.ts): container shims re-parented to init, whose containerd
 * is gone, and the kubelet's cgroup root of a node whose namespace holder is gone. The next node's start
 * sweeps them and leaves a live node's alone. Stand-ins: a shell named like a shim (with a child, as a
 * shim has its container), a `sleep infinity` in a network namespace of its own as a live holder.
 */

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function fakeShim(socket: string): ChildProcess {
  // `sleep; :` keeps the shell as the parent of its sleep, as a shim is of its container.
  return spawn(
    'sh',
    ['-c', 'sleep 300; :', 'containerd-shim-runc-v2', '-namespace', 'k8s.io', '-address', socket],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
}

describeOnRealNode('A node sweeps what a crashed run left', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const cgroups: string[] = [];

  afterAll(() => {
    for (const c of children) if (alive(c.pid)) process.kill(c.pid as number, 'SIGKILL');
    for (const g of cgroups) removeNodeCgroup(g);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("kills the shims of a node whose containerd is gone and removes a dead node's cgroups, not a live node's", async () => {
    const dead = mkdtempSync(join(tmpdir(), 'aro-sweep-dead-'));
    dirs.push(dead);
    const shim = fakeShim(join(dead, 'node', 'containerd', 'containerd.sock'));
    children.push(shim);
    // A live node: its containerd runs (a process named as the node harness starts it).
    const live = mkdtempSync(join(tmpdir(), 'aro-sweep-live-'));
    dirs.push(live);
    const liveShim = fakeShim(join(live, 'node', 'containerd', 'containerd.sock'));
    const liveContainerd = spawn(
      'sh',
      ['-c', 'sleep 300; :', 'containerd', '--config', join(live, 'node', 'containerd', 'config.toml')],
      { detached: true, stdio: 'ignore' },
    );
    children.push(liveShim, liveContainerd);
    const holder = spawn('unshare', ['--net', '--', 'sleep', 'infinity'], {
      detached: true,
      stdio: 'ignore',
    });
    children.push(holder);
    const deadCgroup = nodeCgroupName(2 ** 22 + 1); // above pid_max: no process has it
    const liveCgroup = nodeCgroupName(holder.pid as number);
    cgroups.push(deadCgroup, liveCgroup);
    createNodeCgroup(deadCgroup);
    createNodeCgroup(liveCgroup);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the holder in its namespace

    const swept = await sweepEarlierRuns();

    expect(swept.join('\n')).toContain(join(dead, 'node', 'containerd', 'containerd.sock'));
    expect(alive(shim.pid)).toBe(false);
    expect(alive(liveShim.pid)).toBe(true);
    expect(existsSync(`/sys/fs/cgroup/memory/${deadCgroup}`)).toBe(false);
    expect(existsSync(`/sys/fs/cgroup/memory/${liveCgroup}`)).toBe(true);
  });
});
