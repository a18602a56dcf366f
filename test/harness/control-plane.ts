import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
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
import { ControlPlaneMember, type ControlPlaneMemberName } from './control-plane-member';
import { ControlPlaneStartup, httpStatus, StartFailure } from './control-plane-startup';
import { freePorts } from './ports';
import { killAllManagedProcessesNow, type ManagedProcess } from './processes';
import { kubeRequest } from './rest';
import { nodeApiserverArgs, nodeControllerManagerArgs } from './node/node-control-plane-flags';
import { NODE_NETWORK } from './node/node-files';
import { prepareNode, type NodeArtifacts } from './node/prepare';
import { RealNode } from './node/real-node';

export { parseDuration, type ControlPlaneInfo, type ControlPlaneOptions } from './control-plane-options';
export type { ControlPlaneMemberName } from './control-plane-member';

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
  /** Restarts under way, which a stop waits for: a process started after the stop would outlive it. */
  private readonly restarts = new Set<Promise<unknown>>();
  /** The members a `restart` has taken down and not yet brought back. */
  private readonly outages = new Set<ControlPlaneMemberName>();
  /** Every pid a member has had, restarts included: what a test checks is gone after the stop. */
  private readonly everyPid: number[];

  private constructor(
    readonly info: ControlPlaneInfo,
    private readonly members: readonly ControlPlaneMember[],
    private readonly reaper: ManagedProcess,
    private readonly stopTimeoutMs: number,
    private readonly log: (line: string) => void,
  ) {
    this.everyPid = members.map((m) => m.process.pid);
  }

  /** The processes running now, in start order (etcd, kube-apiserver, kube-controller-manager). */
  get processes(): readonly ManagedProcess[] {
    return this.members.map((m) => m.process);
  }

  /** Every pid the control plane's processes have had, those before a restart included. */
  get pidsEver(): readonly number[] {
    return [...this.everyPid, this.reaper.pid];
  }

  /**
   * Ends `name` as a crash (SIGKILL) or a graceful stop (SIGTERM, SIGKILL after the stop timeout) would;
   * `startAgain` brings it back on the same data, ports and certificates.
   */
  async kill(name: ControlPlaneMemberName, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const member = this.member(name);
    const exit = await member.kill(signal, this.stopTimeoutMs);
    this.log(
      `${name} (pid ${member.process.pid}) ended by ${signal}: code ${exit?.code}, signal ${exit?.signal}`,
    );
  }

  /**
   * Starts `name` again after `kill` (`afterMs` later: its downtime) and resolves once it serves, with
   * its new pid. Refused once the control plane is stopping, during the downtime too: a stop waits for
   * the restarts under way and none starts a process after it.
   */
  startAgain(name: ControlPlaneMemberName, options: { afterMs?: number } = {}): Promise<number> {
    const restart = (async () => {
      if (options.afterMs) await sleep(options.afterMs);
      if (this.stopping) throw new Error(`the control plane is stopping; ${name} stays down`);
      const began = Date.now();
      const started = await this.member(name).startAgain();
      this.everyPid.push(started.pid);
      if (name === 'etcd') this.info.pids.etcd = started.pid;
      if (name === 'kube-apiserver') this.info.pids.kubeApiserver = started.pid;
      if (name === 'kube-controller-manager') this.info.pids.kubeControllerManager = started.pid;
      writeFileSync(this.infoPath, JSON.stringify(this.info, null, 2));
      this.log(
        `${name} serving again as pid ${started.pid} after ${((Date.now() - began) / 1000).toFixed(1)} s`,
      );
      return started.pid;
    })();
    this.restarts.add(restart);
    void restart.catch(() => undefined).finally(() => this.restarts.delete(restart));
    return restart;
  }

  /**
   * `kill`, then `startAgain` once `downtimeMs` have passed since the process was gone: a member's
   * whole outage, which `restarting` reports until it serves again (or failed to). Refused while one
   * is under way for the same member: a second kill would hit the process being started.
   */
  restart(
    name: ControlPlaneMemberName,
    options: { signal: 'SIGKILL' | 'SIGTERM'; downtimeMs: number },
  ): Promise<{ goneAfterMs: number; pid: number }> {
    if (this.outages.has(name)) return Promise.reject(new Error(`${name} is being restarted already`));
    const began = Date.now();
    const outage = (async () => {
      await this.kill(name, options.signal);
      const goneAfterMs = Date.now() - began;
      return { goneAfterMs, pid: await this.startAgain(name, { afterMs: options.downtimeMs }) };
    })();
    this.outages.add(name);
    void outage.catch(() => undefined).finally(() => this.outages.delete(name));
    return outage;
  }

  /** Whether `restart` of this member is under way (the process going, down, or starting). */
  restarting(name: ControlPlaneMemberName): boolean {
    return this.outages.has(name);
  }

  /** Resolves once every restart under way has its process serving (or has failed). */
  async restartsSettled(): Promise<void> {
    await Promise.allSettled([...this.restarts]);
  }

  private member(name: ControlPlaneMemberName): ControlPlaneMember {
    const member = this.members.find((m) => m.name === name);
    if (!member) throw new Error(`this control plane runs no ${name}`);
    return member;
  }

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
    const etcdReady = async (): Promise<boolean> => {
      const res = await httpStatus(`${etcdUrl}/health`);
      return res.status === 200 && res.body.includes('"true"');
    };
    await startup.waitUntil(etcd, `etcd to report healthy at ${etcdUrl}/health`, etcdReady);
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
    const apiserverReady = async (): Promise<boolean> => {
      const res = await kubeRequest(kc, { path: '/healthz', timeoutMs: 5_000 });
      return res.status === 200;
    };
    await startup.waitUntil(apiserver, `kube-apiserver to answer /healthz at ${server}`, apiserverReady);
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
    const kcmReady = async (): Promise<boolean> => {
      const res = await httpStatus(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true });
      return res.status === 200;
    };
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
        kcmReady,
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
    const ready = { etcd: etcdReady, 'kube-apiserver': apiserverReady, 'kube-controller-manager': kcmReady };
    const members = startup.started.map((process) => {
      const name = process.name as ControlPlaneMemberName;
      const commandLine = startup.commandLines.get(name);
      if (!commandLine) throw new Error(`no command line recorded for ${name}`);
      return new ControlPlaneMember({ name, ...commandLine, ready: ready[name] }, process, startup);
    });
    const plane = new ControlPlane(info, members, startup.reaper, options.stopTimeoutMs, log);
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
      await this.restartsSettled();
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
