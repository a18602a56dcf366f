import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ManagedProcess } from '../processes';
import { NODE_NETWORK } from './node-files';

const run = promisify(execFile);

/**
 * Host paths that containerd, the CNI plugins and the kubelet write whatever their flags say (shim
 * sockets and fifos, libcni's cache, pod logs, the kubelet's device-plugin socket and default cert dir).
 * Each gets a tmpfs in the node's mount namespace, so the host only ever sees an empty folder, which
 * the teardown removes when the node made it.
 */
const HOST_PATHS_MASKED = [
  '/run/containerd',
  '/var/lib/cni',
  '/var/log/pods',
  '/var/log/containers',
  '/var/lib/kubelet',
];

/**
 * Kernel settings the kubelet writes at start when they differ from what it wants (its
 * setupKernelTunables). They are global, not per namespace: in the node's mount namespace a file already
 * holding the wanted value is bound over each, so the kubelet reads it, agrees, and writes nothing.
 */
const KUBELET_SYSCTLS: Record<string, string> = {
  'vm/overcommit_memory': '1',
  'vm/panic_on_oom': '0',
  'kernel/panic': '10',
  'kernel/panic_on_oops': '1',
  'kernel/keys/root_maxkeys': '1000000',
  'kernel/keys/root_maxbytes': '25000000',
};

/**
 * One network namespace + one private mount namespace, pinned by a `sleep` (the holder): everything of the
 * node runs inside them. The network namespace holds only `lo`, with the node's IP and the apiserver
 * Service IP, and the pod bridge the CNI plugin adds; no link and no route lead out of it. Ending the
 * holder (and everything started inside) ends both namespaces, with every mount, link and iptables rule
 * made in them.
 */
export class NodeNamespace {
  private readonly createdHostDirs: string[] = [];

  private constructor(
    readonly dir: string,
    readonly holder: ManagedProcess,
  ) {}

  static async create(dir: string, pidFile: string): Promise<NodeNamespace> {
    const holder = await ManagedProcess.start({
      name: 'node-namespace',
      binary: 'unshare',
      // No --fork: unshare execs sleep, so the pid is the holder's own.
      args: ['--net', '--mount', '--propagation', 'slave', '--', 'sleep', 'infinity'],
      logFile: join(dir, 'node-namespace.log'),
      pidFile,
    });
    const ns = new NodeNamespace(dir, holder);
    try {
      await ns.waitUntilEntered();
      await ns.setUp();
    } catch (err) {
      await ns.destroy();
      throw err;
    }
    return ns;
  }

  /** The command prefix that runs a program inside both namespaces, in `cwd` (default: the node folder). */
  enter(cwd = this.dir): string[] {
    return ['nsenter', '-t', String(this.holder.pid), '-n', '-m', `--wd=${cwd}`, '--'];
  }

  /** Runs a command inside the namespaces and returns its stdout; fails with its stderr. */
  async exec(command: readonly string[], timeoutMs = 30_000): Promise<string> {
    const [binary, ...args] = [...this.enter(), ...command];
    try {
      const { stdout } = await run(binary, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string };
      throw new Error(`in the node namespace, ${command.join(' ')}: ${e.stderr?.trim() || e.message}`, {
        cause: err,
      });
    }
  }

  private async waitUntilEntered(): Promise<void> {
    const ownNet = await run('readlink', ['/proc/self/ns/net']).then((r) => r.stdout.trim());
    for (let i = 0; i < 100; i++) {
      const theirs = await run('readlink', [`/proc/${this.holder.pid}/ns/net`]).then(
        (r) => r.stdout.trim(),
        () => '',
      );
      if (theirs && theirs !== ownNet) return;
      if (!this.holder.running) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the node's namespace holder did not start: ${this.holder.logTail(10)}`);
  }

  private async setUp(): Promise<void> {
    await this.exec(['ip', 'link', 'set', 'lo', 'up']);
    for (const address of [NODE_NETWORK.nodeIp, NODE_NETWORK.apiserverServiceIp]) {
      await this.exec(['ip', 'addr', 'add', `${address}/32`, 'dev', 'lo']);
    }
    for (const path of HOST_PATHS_MASKED) {
      if (!existsSync(path)) {
        mkdirSync(path, { recursive: true });
        this.createdHostDirs.push(path);
      }
      await this.exec(['mount', '-t', 'tmpfs', '-o', 'mode=0755', 'tmpfs', path]);
    }
    const sysctlDir = join(this.dir, 'sysctl');
    mkdirSync(sysctlDir, { recursive: true });
    for (const [key, wanted] of Object.entries(KUBELET_SYSCTLS)) {
      const procPath = `/proc/sys/${key}`;
      if (!existsSync(procPath) || readFileSync(procPath, 'utf8').trim() === wanted) continue;
      const file = join(sysctlDir, key.replace(/\//g, '.'));
      writeFileSync(file, `${wanted}\n`);
      await this.exec(['mount', '--bind', file, procPath]);
    }
  }

  /** Ends the namespaces (the holder) and removes the empty host folders the masks needed. */
  async destroy(): Promise<void> {
    await this.holder.stop(5_000);
    for (const path of this.createdHostDirs.reverse()) {
      try {
        rmdirSync(path);
      } catch {
        // Not empty: something outside the node wrote there meanwhile; not ours to remove.
      }
    }
    // Parents made for them (/var/log, /var/lib are always there; /run too) are left as they were.
  }
}
