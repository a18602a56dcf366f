import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { cgroupHolderPid, nodeCgroups, removeNodeCgroup } from './node-cgroups';
import { containerdSocket } from './node-files';

/**
 * The processes a node leaves when its run dies without a teardown. The control plane's reaper kills
 * the process groups it started (containerd, the kubelet, the namespace holder), but not the container
 * shims: containerd starts each in a session of its own, re-parented to init. They are found by the one
 * thing that is only a node's: its containerd's socket path on their command line.
 */

interface ProcessRow {
  pid: number;
  ppid: number;
  cmdline: string;
}

/** Process ids with their parent and command line, from /proc. */
function processTable(): ProcessRow[] {
  const rows: ProcessRow[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      rows.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // Gone between the listing and the read.
    }
  }
  return rows;
}

/** SIGKILLs `roots` and every process under them; returns how many were killed. */
function killTrees(table: readonly ProcessRow[], roots: readonly number[]): number {
  const doomed = new Set(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of table) {
      if (doomed.has(p.ppid) && !doomed.has(p.pid)) {
        doomed.add(p.pid);
        grew = true;
      }
    }
  }
  let killed = 0;
  for (const pid of doomed) {
    try {
      process.kill(pid, 'SIGKILL');
      killed++;
    } catch {
      // Already gone.
    }
  }
  return killed;
}

/** Kills the container shims of the node whose containerd listens on `socket`, and their containers. */
export function killShims(socket: string): void {
  const table = processTable();
  const shims = table.filter((p) => p.cmdline.includes('containerd-shim') && p.cmdline.includes(socket));
  killTrees(
    table,
    shims.map((p) => p.pid),
  );
}

/** Whether `pid` is a live node namespace holder (`sleep infinity` in a network namespace not ours). */
export function isLiveNodeHolder(pid: number): boolean {
  try {
    if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim() !== 'sleep infinity') {
      return false;
    }
    return readlinkSync(`/proc/${pid}/ns/net`) !== readlinkSync('/proc/self/ns/net');
  } catch {
    return false;
  }
}

/**
 * Cleans up what earlier runs of the harness left on this host when they died without a teardown (a
 * crashed or SIGKILLed jest): the shims (and containers) of node folders whose containerd is gone, then
 * the cgroup roots of nodes whose namespace holder is gone. Live nodes of concurrent runs are left alone:
 * their containerd, or their holder, still runs. Returns one line per thing removed.
 */
export async function sweepEarlierRuns(): Promise<string[]> {
  const swept: string[] = [];
  const table = processTable();
  const socketOf = (cmdline: string): string | undefined =>
    /-address (\S+\/node\/containerd\/containerd\.sock)(\s|$)/.exec(cmdline)?.[1];
  const liveSockets = new Set(
    table
      .map((p) => /(?:^|\s)\S*containerd --config (\S+)\/containerd\/config\.toml/.exec(p.cmdline)?.[1])
      .filter((dir): dir is string => dir !== undefined)
      .map((dir) => containerdSocket(dir)),
  );
  const orphanShims = new Map<string, number[]>();
  for (const p of table) {
    if (!p.cmdline.includes('containerd-shim')) continue;
    const socket = socketOf(p.cmdline);
    if (!socket || liveSockets.has(socket)) continue;
    orphanShims.set(socket, [...(orphanShims.get(socket) ?? []), p.pid]);
  }
  for (const [socket, pids] of orphanShims) {
    const killed = killTrees(table, pids);
    swept.push(`${killed} processes of ${pids.length} container shims of ${socket} (its containerd is gone)`);
  }
  // A SIGKILLed process leaves its cgroup only once it has exited.
  if (orphanShims.size > 0) await sleep(1_000);
  for (const cgroup of nodeCgroups()) {
    const holder = cgroupHolderPid(cgroup);
    if (holder === undefined || isLiveNodeHolder(holder)) continue;
    removeNodeCgroup(cgroup.slice(cgroup.lastIndexOf('/') + 1));
    swept.push(`cgroup ${cgroup} (its node's namespace holder ${holder} is gone)`);
  }
  return swept;
}
