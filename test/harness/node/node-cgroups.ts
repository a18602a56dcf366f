import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Each node's kubelet keeps its pods under a cgroup root of its own (`cgroupRoot` in its config), named
 * after the node's namespace holder: two nodes on one host (a CI job and a developer's run, two test
 * runs at once) would otherwise share `/kubepods`, and a kubelet removes the pod cgroups it does not
 * know, killing the other node's containers. The name says whose it is, so a later run can tell a
 * crashed run's leftover (holder gone) from a live node's.
 */

const CGROUP_FS = '/sys/fs/cgroup';
const PREFIX = 'aro-node-';

/** The kubelet's `cgroupRoot` for the node whose namespace holder is `holderPid`. */
export function nodeCgroupName(holderPid: number): string {
  return `${PREFIX}${holderPid}`;
}

/** The mounted hierarchies (cgroup v1 controllers, the named `systemd` one, the unified one). */
function hierarchies(): string[] {
  if (!existsSync(CGROUP_FS)) return [];
  return readdirSync(CGROUP_FS)
    .map((h) => join(CGROUP_FS, h))
    .filter((p) => existsSync(join(p, 'cgroup.procs')));
}

/**
 * Makes the node's cgroup root in every hierarchy (the kubelet refuses a `cgroupRoot` that does not
 * exist). A new cpuset cgroup starts with no CPUs and no memory nodes, so it gets its parent's.
 */
export function createNodeCgroup(name: string): void {
  for (const hierarchy of hierarchies()) {
    const dir = join(hierarchy, name);
    mkdirSync(dir, { recursive: true });
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      const mine = join(dir, file);
      if (existsSync(mine) && readFileSync(mine, 'utf8').trim() === '') {
        copyFileSync(join(hierarchy, file), mine);
      }
    }
  }
}

/** Removes the node's cgroup tree in every hierarchy, deepest first; a folder still holding a process stays. */
export function removeNodeCgroup(name: string): void {
  const removeTree = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      const child = join(dir, entry);
      try {
        if (statSync(child).isDirectory()) removeTree(child);
      } catch {
        // Vanished meanwhile.
      }
    }
    try {
      rmdirSync(dir);
    } catch {
      // A process still in it (the host check reports it) or already gone.
    }
  };
  for (const hierarchy of hierarchies()) {
    const dir = join(hierarchy, name);
    if (existsSync(dir)) removeTree(dir);
  }
}

/** Every node cgroup root on the host (`/sys/fs/cgroup/<hierarchy>/aro-node-<pid>`). */
export function nodeCgroups(): string[] {
  return hierarchies().flatMap((h) =>
    readdirSync(h)
      .filter((entry) => entry.startsWith(PREFIX))
      .map((entry) => join(h, entry)),
  );
}

/** The holder pid a node cgroup is named after (undefined for one not named by a node). */
export function cgroupHolderPid(path: string): number | undefined {
  const base = path.slice(path.lastIndexOf('/') + 1);
  return base.startsWith(PREFIX) ? Number(base.slice(PREFIX.length)) : undefined;
}
