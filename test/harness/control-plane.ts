import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { findControlPlaneBinaries, type ControlPlaneBinaries } from './binaries';
import { installCrds, type InstalledCrd } from './crds';
import { AUDIT_LOG, createPki, INFO_FILE, writeKubeconfig } from './control-plane-files';
import { apiserverArgs, controllerManagerArgs, etcdArgs } from './control-plane-flags';
import {
  type ControlPlaneInfo,
  type ControlPlaneOptions,
  resolveControlPlaneOptions,
  type ResolvedControlPlaneOptions,
} from './control-plane-options';
import { ControlPlaneStartup, httpStatus, StartFailure } from './control-plane-startup';
import { freePorts } from './ports';
import { killAllManagedProcessesNow, type ManagedProcess } from './processes';
import { kubeRequest } from './rest';
import { nodeApiserverArgs, nodeControllerManagerArgs } from './node/node-control-plane-flags';
import { NODE_NETWORK } from './node/node-files';
import { prepareNode, type NodeArtifacts } from './node/prepare';
import { RealNode } from './node/real-node';

export { parseDuration, type ControlPlaneInfo, type ControlPlaneOptions } from './control-plane-options';

const START_ATTEMPTS = 5;

/** Every control plane not yet stopped, for the exit and signal handlers. */
const running = new Set<ControlPlane>();
let exitHandlerInstalled = false;

function installExitHandler(): void {
  if (exitHandlerInstalled) {
    return;
  }
  exitHandlerInstalled = true;
  // 'exit' handlers cannot wait: kill everything outright and remove the folders synchronously.
  process.on('exit', () => {
    killAllManagedProcessesNow();
    for (const plane of running) {
      rmSync(plane.info.runDir, { recursive: true, force: true });
    }
  });
}

/**
 * etcd + kube-apiserver (+ kube-controller-manager for GC and namespace deletion) on loopback, with a test
 * PKI and an admin kubeconfig in a private temporary run folder that the stop removes.
 */
export class ControlPlane {
  private stopping: Promise<void> | undefined;
  /** The real node, when started with `node: true`. */
  node: RealNode | undefined;
  private readonly signalHandlers = new Map<NodeJS.Signals, () => void>();

  private constructor(
    readonly info: ControlPlaneInfo,
    readonly processes: readonly ManagedProcess[],
    private readonly reaper: ManagedProcess,
    private readonly stopTimeoutMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Reads the description a running control plane wrote into its run folder. */
  static readInfo(path: string): ControlPlaneInfo {
    return JSON.parse(readFileSync(path, 'utf8')) as ControlPlaneInfo;
  }

  get infoPath(): string {
    return join(this.info.runDir, INFO_FILE);
  }

  /** An admin (system:masters) client configuration. */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.info.kubeconfigPath);
    return kc;
  }

  static async start(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
    const resolved = resolveControlPlaneOptions(options);
    const { log } = resolved;
    const binaries = options.binaries ?? (await findControlPlaneBinaries(log));
    for (const [name, found] of Object.entries(binaries)) {
      if (found) {
        log(`${name}: ${found.path} (from ${found.source})`);
      }
    }
    installExitHandler();
    // Installing and building what the node needs takes minutes the first time; it happens before any
    // process starts, outside the start timeouts.
    const nodeArtifacts = options.node ? await prepareNode(log) : undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        const plane = await ControlPlane.startOnce({ ...resolved, binaries });
        if (nodeArtifacts) await plane.startNode(nodeArtifacts);
        if (options.handleSignals) {
          plane.installSignalHandlers();
        }
        return plane;
      } catch (err) {
        if (err instanceof StartFailure && err.portRace && attempt < START_ATTEMPTS) {
          log(`a port was taken between picking and binding it; starting again (attempt ${attempt + 1})`);
          continue;
        }
        throw err;
      }
    }
  }

  private static async startOnce(
    options: ResolvedControlPlaneOptions & { binaries: ControlPlaneBinaries },
  ): Promise<ControlPlane> {
    const startup = await ControlPlaneStartup.begin(options.startTimeoutMs, options.attachOutput);
    // Everything from here on cleans up through `fail`, whatever goes wrong: a spawn error or a full disk
    // must not leave processes or the run folder behind until the reaper notices.
    try {
      return await ControlPlane.boot(startup, options);
    } catch (err) {
      if (err instanceof StartFailure) {
        throw err;
      }
      return startup.fail(`Starting the control plane failed: ${(err as Error).message}`);
    }
  }

  private static async boot(
    startup: ControlPlaneStartup,
    options: ResolvedControlPlaneOptions & { binaries: ControlPlaneBinaries },
  ): Promise<ControlPlane> {
    const { binaries, log, startTimeoutMs } = options;
    const { runDir } = startup;
    const certs = await createPki(startup.pki, options.node ? [NODE_NETWORK.apiserverServiceIp] : []);
    const { servingCa, clientCa, admin } = certs;
    const [etcdClientPort, etcdPeerPort, apiPort, kcmPort] = await freePorts(4);

    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
    const etcd = await startup.startProcess('etcd', binaries.etcd.path, etcdArgs(startup, etcdUrl, peerUrl));
    await startup.waitUntil(etcd, `etcd to report healthy at ${etcdUrl}/health`, async () => {
      const res = await httpStatus(`${etcdUrl}/health`);
      return res.status === 200 && res.body.includes('"true"');
    });
    log(`etcd healthy after ${startup.since()}`);

    const server = `https://127.0.0.1:${apiPort}`;
    const apiserver = await startup.startProcess(
      'kube-apiserver',
      binaries.kubeApiserver.path,
      options.node
        ? nodeApiserverArgs(apiserverArgs(startup, certs, etcdUrl, apiPort, options.auditLog === true))
        : apiserverArgs(startup, certs, etcdUrl, apiPort, options.auditLog === true),
    );
    const kubeconfigPath = join(runDir, 'kubeconfig');
    writeKubeconfig(kubeconfigPath, server, servingCa.certPath, admin.certPath, admin.keyPath);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    await startup.waitUntil(apiserver, `kube-apiserver to answer /healthz at ${server}`, async () => {
      const res = await kubeRequest(kc, { path: '/healthz', timeoutMs: 5_000 });
      return res.status === 200;
    });
    // /healthz turns green before the bootstrap controller has created the system namespaces; a test that
    // starts in that gap would find no `default` namespace.
    await startup.waitUntil(apiserver, 'the default namespace to exist', async () => {
      const res = await kubeRequest(kc, { path: '/api/v1/namespaces/default', timeoutMs: 5_000 });
      return res.status === 200;
    });
    log(`kube-apiserver ready after ${startup.since()}`);

    // The CRDs go in before kube-controller-manager starts. Its garbage collector watches the kinds
    // discovery shows when it starts and looks again only every 30 s: started first, it would not see
    // an EphemeralRunner go for up to that long, and a runner pod whose owner went in that window would
    // wait for the next look (plus the collector's backoff on an owner it has not observed), 10-20 s
    // measured, instead of under a second.
    let crds: InstalledCrd[];
    try {
      crds = await installCrds(kc, options.crdPaths ?? [], { timeoutMs: startTimeoutMs });
    } catch (err) {
      return startup.fail(`Installing the CRDs failed: ${(err as Error).message}`, apiserver);
    }

    let controllerManager: ManagedProcess | undefined;
    if (options.withoutControllerManager) {
      log(
        '!!! running WITHOUT kube-controller-manager, as asked: no garbage collection, no namespace deletion',
      );
    } else if (binaries.kubeControllerManager) {
      controllerManager = await startup.startProcess(
        'kube-controller-manager',
        binaries.kubeControllerManager.path,
        options.node
          ? nodeControllerManagerArgs(
              controllerManagerArgs(startup, kubeconfigPath, kcmPort),
              servingCa.certPath,
            )
          : controllerManagerArgs(startup, kubeconfigPath, kcmPort),
      );
      await startup.waitUntil(
        controllerManager,
        `kube-controller-manager to answer /healthz on port ${kcmPort}`,
        async () => {
          const res = await httpStatus(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true });
          return res.status === 200;
        },
      );
      log(`kube-controller-manager ready after ${startup.since()}`);
    }

    const info: ControlPlaneInfo = {
      ...(options.auditLog ? { auditLogPath: join(runDir, AUDIT_LOG) } : {}),
      runDir,
      kubeconfigPath,
      server,
      clientCaCertPath: clientCa.certPath,
      clientCaKeyPath: clientCa.keyPath,
      servingCaCertPath: servingCa.certPath,
      garbageCollector: controllerManager !== undefined,
      crds,
      pids: {
        etcd: etcd.pid,
        kubeApiserver: apiserver.pid,
        kubeControllerManager: controllerManager?.pid,
        reaper: startup.reaper.pid,
      },
    };
    writeFileSync(join(runDir, INFO_FILE), JSON.stringify(info, null, 2));
    const plane = new ControlPlane(info, startup.started, startup.reaper, options.stopTimeoutMs, log);
    running.add(plane);
    log(
      `up in ${startup.since()} at ${server} ` +
        `(${crds.length} CRDs${controllerManager ? ', with kube-controller-manager' : ', WITHOUT kube-controller-manager'}); run folder ${runDir}`,
    );
    return plane;
  }

  /** Starts the real node against this control plane; a node that fails to start stops the plane too. */
  private async startNode(artifacts: NodeArtifacts): Promise<void> {
    try {
      this.node = await RealNode.start({ plane: this.info, artifacts, log: this.log });
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.info.node = this.node.info;
    writeFileSync(this.infoPath, JSON.stringify(this.info, null, 2));
  }

  /**
   * Stops the real node (if any), kcm, then the apiserver, then etcd (SIGTERM, SIGKILL after the stop
   * timeout) and removes the run folder.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const began = Date.now();
      for (const [signal, handler] of this.signalHandlers) {
        process.removeListener(signal, handler);
      }
      await this.node?.stop();
      for (const p of [...this.processes].reverse()) {
        const stepBegan = Date.now();
        await p.stop(this.stopTimeoutMs);
        this.log(`stopped ${p.name} in ${((Date.now() - stepBegan) / 1000).toFixed(1)} s`);
      }
      await this.reaper.stop(1_000);
      rmSync(this.info.runDir, { recursive: true, force: true });
      running.delete(this);
      this.log(`stopped in ${((Date.now() - began) / 1000).toFixed(1)} s; removed ${this.info.runDir}`);
    })();
    return this.stopping;
  }

  private installSignalHandlers(): void {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const handler = (): void => {
        this.log(`${signal}: stopping the control plane`);
        void this.stop().finally(() => {
          // The handlers are gone now, so re-raising the signal does what it would have done without us.
          process.kill(process.pid, signal);
        });
      };
      this.signalHandlers.set(signal, handler);
      process.on(signal, handler);
    }
  }
}
