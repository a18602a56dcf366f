import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cgroupHolderPid, nodeCgroups } from './node-cgroups';
import { isLiveNodeHolder } from './node-processes';

/**
 * What a real node must leave on the host as it found it: the kernel settings the kubelet writes, the
 * iptables rules, the network links, the mounts in the places the node works in, and the processes.
 * `captureHostState` before the node starts and `hostChanges` after it stopped name every difference.
 *
 * Mounts are compared only where the node could have made them (its folder, the host paths it masks,
 * /proc/sys, the cgroup tree): other sessions share this machine and may mount elsewhere meanwhile.
 */

const SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
  'net/ipv4/ip_forward',
  'net/bridge/bridge-nf-call-iptables',
];
const IPTABLES_TABLES = ['filter', 'nat', 'mangle', 'raw'];
const WATCHED_MOUNT_PREFIXES = [
  '/proc/sys',
  '/run/containerd',
  '/var/lib/cni',
  '/var/lib/kubelet',
  '/var/log/pods',
  '/var/log/containers',
  '/sys/fs/cgroup',
  '/run/netns',
];

export interface HostState {
  sysctls: Record<string, string>;
  iptables: Record<string, string[]>;
  links: string[];
  mounts: string[];
  /** The kubelets' cgroup roots (node-cgroups.ts). */
  nodeCgroups: string[];
}

function readSysctl(key: string): string {
  const path = `/proc/sys/${key}`;
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : '(absent)';
}

function iptablesRules(table: string): string[] {
  try {
    return execFileSync('iptables', ['-t', table, '-S'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .split('\n')
      .filter(Boolean);
  } catch (err) {
    return [`(iptables -t ${table} -S failed: ${(err as Error).message.split('\n')[0]})`];
  }
}

function links(): string[] {
  return readdirSync('/sys/class/net').sort();
}

function mountPoints(extraPrefixes: readonly string[]): string[] {
  const prefixes = [...WATCHED_MOUNT_PREFIXES, ...extraPrefixes];
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter(
      (point): point is string => !!point && prefixes.some((p) => point === p || point.startsWith(`${p}/`)),
    )
    .sort();
}

/** `nodeDir`: the folder the node will live in, whose mounts are watched too. */
export function captureHostState(nodeDirs: readonly string[] = []): HostState {
  return {
    sysctls: Object.fromEntries(SYSCTLS.map((k) => [k, readSysctl(k)])),
    iptables: Object.fromEntries(IPTABLES_TABLES.map((t) => [t, iptablesRules(t)])),
    links: links(),
    mounts: mountPoints(nodeDirs),
    nodeCgroups: nodeCgroups(),
  };
}

/** Every difference between two captures, one line each; empty when the host is as it was. */
export function hostChanges(before: HostState, after: HostState): string[] {
  const changes: string[] = [];
  for (const key of Object.keys(before.sysctls)) {
    if (before.sysctls[key] !== after.sysctls[key]) {
      changes.push(`sysctl ${key.replace(/\//g, '.')}: ${before.sysctls[key]} -> ${after.sysctls[key]}`);
    }
  }
  const listDiff = (what: string, a: readonly string[], b: readonly string[]): void => {
    for (const x of b) if (!a.includes(x)) changes.push(`${what} added: ${x}`);
    for (const x of a) if (!b.includes(x)) changes.push(`${what} removed: ${x}`);
  };
  for (const table of Object.keys(before.iptables)) {
    listDiff(`iptables -t ${table}`, before.iptables[table], after.iptables[table] ?? []);
  }
  listDiff('network link', before.links, after.links);
  listDiff('mount', before.mounts, after.mounts);
  // Other runs' nodes may come and go meanwhile: a cgroup added is ours to answer for unless a live
  // node owns it; one removed counts only when no node owned it.
  for (const c of after.nodeCgroups) {
    if (before.nodeCgroups.includes(c)) continue;
    const holder = cgroupHolderPid(c);
    if (holder === undefined || !isLiveNodeHolder(holder)) changes.push(`cgroup added: ${c}`);
  }
  for (const c of before.nodeCgroups) {
    if (!after.nodeCgroups.includes(c) && cgroupHolderPid(c) === undefined)
      changes.push(`cgroup removed: ${c}`);
  }
  return changes;
}

/** Processes still alive among `pids`, and any process whose command line names `dir`. */
export function leftoverProcesses(pids: readonly number[], dir: string): string[] {
  const left: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    } catch {
      continue;
    }
    if (!cmdline) continue; // a zombie or a kernel thread
    if (pids.includes(Number(entry)) || cmdline.includes(dir))
      left.push(`${entry}: ${cmdline.slice(0, 160)}`);
  }
  return left;
}

/**
 * `hostChanges` once the host has settled: another run's node that is stopping on this machine at the
 * moment of the check has already killed its namespace holder and is about to remove its cgroup root
 * (real-node.ts, `stop`), which would read as a cgroup nobody holds. Looked at again every half second
 * for up to `settleMs`; what is still changed then is returned.
 */
export async function settledHostChanges(
  before: HostState,
  paths: string[],
  settleMs = 15_000,
): Promise<string[]> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const changes = hostChanges(before, captureHostState(paths));
    if (changes.length === 0 || Date.now() >= deadline) return changes;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
