import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig, type V1Node } from '@kubernetes/client-node';
import type { ControlPlaneInfo } from '../control-plane-options';
import { writeKubeconfig } from '../control-plane-files';
import { issueClientCertificate } from '../pki';
import { freePorts } from '../ports';
import { ManagedProcess } from '../processes';
import { kubeRequest } from '../rest';
import { scaled } from '../time-scale';
import {
  cniConfig,
  containerdConfig,
  containerdSocket,
  kubeletConfig,
  NODE_NAME,
  NODE_NETWORK,
} from './node-files';
import { createNodeCgroup, nodeCgroupName, removeNodeCgroup } from './node-cgroups';
import { NodeNamespace } from './node-namespace';
import { killShims, sweepEarlierRuns } from './node-processes';
import type { NodeArtifacts, NodeImage } from './prepare';

const RELAY = join(__dirname, 'relay.ts');

export interface RealNodeOptions {
  plane: ControlPlaneInfo;
  artifacts: NodeArtifacts;
  log: (line: string) => void;
  /** How long the node may take to become Ready and schedulable; default 120 s. */
  readyTimeoutMs?: number;
}

/** What a running node tells its users; also stored in the control plane's JSON description. */
export interface RealNodeInfo {
  name: string;
  dir: string;
  /** The pid of the namespace holder: `nsenter -t <pid> -n -m` enters the node. */
  namespacePid: number;
  containerdSocket: string;
  images: Record<keyof NodeArtifacts['images'], string>;
  /** How long each image took to build when it was built (cached since, unless the key changed). */
  imageBuildSeconds: Record<keyof NodeArtifacts['images'], number>;
  /** Seconds from start to Ready and schedulable. */
  readySeconds: number;
}

/**
 * A real Kubernetes node beside the test control plane: containerd + runc, a kubelet registered with its
 * own client certificate (user system:node:aro-node, group system:nodes, under the Node authorizer) and
 * kube-scheduler, with the images imported into containerd. Everything of it but the scheduler (an
 * apiserver client like any other) runs inside a network + mount namespace of its own (NodeNamespace);
 * the host's apiserver and any other loopback service reach it through relays (relay.ts).
 */
export class RealNode {
  private readonly processes: ManagedProcess[] = [];
  /** The kubelet's cgroup root (node-cgroups.ts), once made. */
  private cgroup: string | undefined;
  private stopping: Promise<void> | undefined;
  private namespace: NodeNamespace | undefined;
  info!: RealNodeInfo;

  private constructor(
    private readonly options: RealNodeOptions,
    readonly dir: string,
    private readonly pidFile: string,
  ) {}

  static async start(options: RealNodeOptions): Promise<RealNode> {
    const dir = join(options.plane.runDir, 'node');
    mkdirSync(dir, { recursive: true });
    const node = new RealNode(options, dir, join(options.plane.runDir, 'pids'));
    try {
      await node.boot();
    } catch (err) {
      const logs = node.processes.map((p) => `--- ${p.name} (${p.logFile}) ---\n${p.logTail(25)}`).join('\n');
      await node.stop();
      throw new Error(`Starting the real node failed: ${(err as Error).message}\n${logs}`, { cause: err });
    }
    return node;
  }

  private log(line: string): void {
    this.options.log(`[node] ${line}`);
  }

  private async boot(): Promise<void> {
    const began = Date.now();
    const since = (): string => `${((Date.now() - began) / 1000).toFixed(1)} s`;
    const { plane, artifacts } = this.options;
    for (const line of await sweepEarlierRuns()) this.log(`cleaned up after an earlier run: ${line}`);
    for (const sub of ['containerd', 'cni/net.d', 'cni/ipam', 'kubelet', 'kubelet-pki', 'pki', 'relay']) {
      mkdirSync(join(this.dir, sub), { recursive: true });
    }
    this.namespace = await NodeNamespace.create(this.dir, this.pidFile);
    const ns = this.namespace;
    const cgroup = nodeCgroupName(ns.holder.pid);
    this.cgroup = cgroup;
    createNodeCgroup(cgroup);

    // The apiserver, on the host's loopback, at the `kubernetes` Service address inside the node.
    const apiPort = Number(new URL(plane.server).port);
    await this.relay(
      'apiserver',
      `tcp:${NODE_NETWORK.apiserverServiceIp}:${NODE_NETWORK.apiserverServicePort}`,
      `tcp:127.0.0.1:${apiPort}`,
    );

    const root = await this.containerdRoot();
    writeFileSync(join(this.dir, 'containerd', 'config.toml'), containerdConfig(this.dir, root));
    writeFileSync(join(this.dir, 'cni', 'net.d', '10-aro-node.conflist'), cniConfig(this.dir));
    const containerd = await this.startInside('containerd', 'containerd', [
      '--config',
      join(this.dir, 'containerd', 'config.toml'),
    ]);
    await waitFor(containerd, 'containerd to open its socket', 30_000, () =>
      Promise.resolve(existsSync(containerdSocket(this.dir))),
    );
    this.log(`containerd up after ${since()}`);
    // A kept root may hold the containers of an earlier run (one that crashed before its stop): none
    // of them belongs to this node's pods, and the kubelet must not find them.
    const leftover = (await ns.exec(this.ctr('containers', 'ls', '-q'))).split('\n').filter(Boolean);
    if (leftover.length > 0) {
      await ns.exec(this.ctr('containers', 'rm', ...leftover), 120_000);
      this.log(`removed ${leftover.length} containers an earlier run left in ${root}`);
    }
    const present = new Set((await ns.exec(this.ctr('images', 'ls', '-q'))).split('\n').filter(Boolean));
    // Images of earlier content keys would pile up in a kept root (~0.5 GB each): only this run's stay.
    const wanted = new Set(Object.values(artifacts.images).map((i: NodeImage) => i.ref));
    const stale = [...present].filter((ref) => ref.startsWith('localhost/aro') && !wanted.has(ref));
    if (stale.length > 0) {
      await ns.exec(this.ctr('images', 'rm', ...stale), 120_000);
      this.log(`removed ${stale.length} images of earlier builds from ${root}`);
    }
    for (const image of Object.values(artifacts.images) as NodeImage[]) {
      if (image === artifacts.images.base) continue; // only a build-time FROM; no pod runs it
      if (present.has(image.ref)) {
        this.log(`${image.ref} already in containerd (kept root)`);
        continue;
      }
      const t = Date.now();
      await ns.exec(this.ctr('images', 'import', image.archive), 300_000);
      this.log(`imported ${image.ref} in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    }

    const pki = join(this.dir, 'pki');
    const cert = await issueClientCertificate(
      { certPath: plane.clientCaCertPath, keyPath: plane.clientCaKeyPath },
      pki,
      'kubelet',
      `system:node:${NODE_NAME}`,
      ['system:nodes'],
    );
    const kubeletKubeconfig = join(this.dir, 'kubelet', 'kubeconfig');
    writeKubeconfig(
      kubeletKubeconfig,
      `https://${NODE_NETWORK.apiserverServiceIp}:${NODE_NETWORK.apiserverServicePort}`,
      plane.servingCaCertPath,
      cert.certPath,
      cert.keyPath,
    );
    writeFileSync(join(this.dir, 'kubelet', 'config.yaml'), kubeletConfig(this.dir, cgroup));
    const kubelet = await this.startInside('kubelet', artifacts.kubelet, [
      `--config=${join(this.dir, 'kubelet', 'config.yaml')}`,
      `--kubeconfig=${kubeletKubeconfig}`,
      `--root-dir=${join(this.dir, 'kubelet', 'root')}`,
      // Its default is /var/lib/kubelet/pki, outside --root-dir (and masked on the host anyway).
      `--cert-dir=${join(this.dir, 'kubelet-pki')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_NETWORK.nodeIp}`,
      '--v=1',
    ]);

    const [schedulerPort] = await freePorts(1);
    const scheduler = await this.start('kube-scheduler', artifacts.kubeScheduler, [
      `--kubeconfig=${plane.kubeconfigPath}`,
      `--authentication-kubeconfig=${plane.kubeconfigPath}`,
      `--authorization-kubeconfig=${plane.kubeconfigPath}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--secure-port=${schedulerPort}`,
    ]);

    const kc = new KubeConfig();
    kc.loadFromFile(plane.kubeconfigPath);
    let last = 'not registered';
    await waitFor(
      kubelet,
      'the node to be Ready and schedulable',
      this.options.readyTimeoutMs ?? 120_000,
      async () => {
        if (!scheduler.running) throw new Error(`kube-scheduler exited: ${scheduler.logTail(10)}`);
        const res = await kubeRequest(kc, { path: `/api/v1/nodes/${NODE_NAME}`, timeoutMs: 5_000 });
        if (res.status !== 200) return false;
        const node = res.body as V1Node;
        const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
        const taints = (node.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`);
        last = `Ready=${ready?.status} (${ready?.reason}: ${ready?.message}); taints: ${taints.join(', ') || 'none'}`;
        // The kubelet registers with node.kubernetes.io/not-ready:NoSchedule; kcm's nodelifecycle
        // controller lifts it once the node is Ready, as on any cluster.
        return ready?.status === 'True' && taints.length === 0;
      },
      () => last,
    );
    this.log(`${NODE_NAME} Ready and schedulable after ${since()}`);

    this.info = {
      name: NODE_NAME,
      dir: this.dir,
      namespacePid: ns.holder.pid,
      containerdSocket: containerdSocket(this.dir),
      images: {
        pause: artifacts.images.pause.ref,
        base: artifacts.images.base.ref,
        aro: artifacts.images.aro.ref,
        runner: artifacts.images.runner.ref,
      },
      imageBuildSeconds: {
        pause: artifacts.images.pause.buildSeconds,
        base: artifacts.images.base.buildSeconds,
        aro: artifacts.images.aro.buildSeconds,
        runner: artifacts.images.runner.buildSeconds,
      },
      readySeconds: (Date.now() - began) / 1000,
    };
  }

  /** Every process the node started (the namespace holder included), for a leftover check. */
  get pids(): number[] {
    return [...this.processes.map((p) => p.pid), ...(this.namespace ? [this.namespace.holder.pid] : [])];
  }

  /**
   * containerd's root (content store and snapshots): one of a few kept under the build cache, the first no
   * other node holds, so imported images survive the run (an import of the aro image is 40-85 s) even
   * with two runs at once (CI beside a person's run); a fresh one in the node's folder when all are held.
   * The hold is a `flock` process that lives as long as the node.
   */
  private async containerdRoot(): Promise<string> {
    const shared = join(this.options.artifacts.cacheRoot, 'node-containerd');
    mkdirSync(shared, { recursive: true });
    for (const slot of ['', '-1', '-2']) {
      const lock = await this.start(`containerd-root-lock${slot}`, 'flock', [
        '-n',
        join(shared, `.lock${slot}`),
        'sleep',
        'infinity',
      ]);
      await sleep(300);
      if (lock.running) return join(shared, `root${slot}`);
    }
    this.log(`other nodes hold every root in ${shared}; using a fresh one (images imported again)`);
    return join(this.dir, 'containerd', 'root');
  }

  /** The last lines of every container's log on the node (`/var/log/pods`, inside its mount namespace). */
  containerLogs(lines = 15): Promise<string> {
    return this.exec([
      'sh',
      '-c',
      `for f in /var/log/pods/*/*/*.log; do [ -f "$f" ] || continue; echo "== $f"; tail -n ${lines} "$f" | cut -c1-400; done`,
    ]);
  }

  /** `ctr` against the node's containerd, in the kubelet's containerd namespace. */
  ctr(...args: string[]): string[] {
    return ['ctr', '-a', containerdSocket(this.dir), '-n', 'k8s.io', ...args];
  }

  /** Runs a command inside the node's namespaces (e.g. `node.exec(node.ctr('tasks', 'ls'))`). */
  exec(command: readonly string[], timeoutMs?: number): Promise<string> {
    if (!this.namespace) throw new Error('the node is not running');
    return this.namespace.exec(command, timeoutMs);
  }

  /**
   * Makes a service on the host's loopback (`127.0.0.1:port`) reachable from the node and its pods at
   * `<node IP>:port`, and returns that `host:port`.
   */
  async exposeHostPort(port: number, name = `port-${port}`): Promise<string> {
    await this.relay(name, `tcp:${NODE_NETWORK.nodeIp}:${port}`, `tcp:127.0.0.1:${port}`);
    return `${NODE_NETWORK.nodeIp}:${port}`;
  }

  private async relay(name: string, inside: string, onHost: string): Promise<void> {
    const socket = join(this.dir, 'relay', `${name}.sock`);
    const flags = ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON', RELAY];
    const host = await this.start(`relay-${name}-host`, process.execPath, [
      ...flags,
      `unix:${socket}`,
      onHost,
    ]);
    const node = await this.startInside(`relay-${name}-node`, process.execPath, [
      ...flags,
      inside,
      `unix:${socket}`,
    ]);
    for (const p of [host, node]) {
      await waitFor(p, `the ${name} relay to listen`, 15_000, () =>
        Promise.resolve(readFileSync(p.logFile, 'utf8').includes('relay ready')),
      );
    }
  }

  private start(name: string, binary: string, args: string[]): Promise<ManagedProcess> {
    return ManagedProcess.start({
      name,
      binary,
      args,
      logFile: join(this.dir, `${name}.log`),
      pidFile: this.pidFile,
    }).then((p) => {
      this.processes.push(p);
      return p;
    });
  }

  private startInside(name: string, binary: string, args: string[]): Promise<ManagedProcess> {
    if (!this.namespace) throw new Error('no node namespace');
    const [enter, ...enterArgs] = this.namespace.enter();
    return this.start(name, enter, [...enterArgs, binary, ...args]);
  }

  /**
   * Stops everything the node started and leaves the host as it found it: the kubelet first (so it starts
   * nothing more), then every container of the node (the shims containerd started, found by its socket),
   * containerd, the scheduler and the relays, then the namespaces (with every mount, link and rule in them)
   * and the kubelet's cgroups.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const began = Date.now();
      const byName = (name: string): ManagedProcess | undefined =>
        this.processes.find((p) => p.name === name);
      await byName('kubelet')?.stop(10_000);
      killShims(containerdSocket(this.dir));
      for (const p of [...this.processes].reverse()) await p.stop(10_000);
      await this.namespace?.destroy();
      if (this.cgroup) removeNodeCgroup(this.cgroup);
      this.log(`stopped in ${((Date.now() - began) / 1000).toFixed(1)} s`);
    })();
    return this.stopping;
  }
}

async function waitFor(
  proc: ManagedProcess,
  what: string,
  timeoutMs: number,
  ready: () => Promise<boolean>,
  detail: () => string = () => '',
): Promise<void> {
  const boundMs = scaled(timeoutMs);
  const deadline = Date.now() + boundMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (!proc.running) {
      throw new Error(`${proc.name} exited (${JSON.stringify(proc.exitStatusOrUndefined)}) before ${what}`);
    }
    try {
      if (await ready()) return;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await sleep(250);
  }
  throw new Error(`Timed out after ${boundMs} ms waiting for ${what}: ${detail() || lastError}`);
}
