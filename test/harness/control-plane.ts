import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { dumpYaml, KubeConfig } from '@kubernetes/client-node';
import { findControlPlaneBinaries, type ControlPlaneBinaries } from './binaries';
import { freePorts } from './ports';
import { installCrds, type InstalledCrd } from './crds';
import {
  createCertificateAuthority,
  createServiceAccountKeyPair,
  issueClientCertificate,
  issueServingCertificate,
} from './pki';
import { killAllManagedProcessesNow, ManagedProcess, startReaper } from './processes';
import { kubeRequest } from './rest';

/** What a test process needs to reach and use a running control plane; stored as JSON in the run folder. */
export interface ControlPlaneInfo {
  runDir: string;
  kubeconfigPath: string;
  server: string;
  /** The CA the apiserver trusts for client certificates; tests mint their own users with it. */
  clientCaCertPath: string;
  clientCaKeyPath: string;
  /** Serving CA of the apiserver, for clients built without the kubeconfig. */
  servingCaCertPath: string;
  /** False when kube-controller-manager is not running: no GC, deleted namespaces stay Terminating. */
  garbageCollector: boolean;
  crds: InstalledCrd[];
  pids: { etcd: number; kubeApiserver: number; kubeControllerManager?: number; reaper: number };
  /** The apiserver's audit log (JSON lines, one per request), when started with `auditLog`. */
  auditLogPath?: string;
}

export interface ControlPlaneOptions {
  /** CRD files or folders to install once the apiserver is up (missing paths install nothing). */
  crdPaths?: readonly string[];
  /** Per-stage start timeout; default KUBEBUILDER_CONTROLPLANE_START_TIMEOUT or 60 s. */
  startTimeoutMs?: number;
  /** SIGTERM-to-SIGKILL grace per process; default KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT or 20 s. */
  stopTimeoutMs?: number;
  /** Copy process output to stderr; default KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT=true. */
  attachOutput?: boolean;
  /** Progress lines; default: stderr with a `[control-plane]` prefix. */
  log?: (line: string) => void;
  /** Tear down on SIGINT/SIGTERM/SIGHUP, then let the signal do what it would have done. */
  handleSignals?: boolean;
  /** Skip the lookup (tests that start a second control plane reuse the first one's). */
  binaries?: ControlPlaneBinaries;
  /** Run without kube-controller-manager even when its binary is there. */
  withoutControllerManager?: boolean;
  /**
   * Write an audit log of every request at Metadata level (who, verb, resource), so a benchmark can count
   * one client's requests exactly: apiserver_request_total has no user label.
   */
  auditLog?: boolean;
}

const INFO_FILE = 'control-plane.json';
const AUDIT_LOG = 'audit.log';

/** Metadata-level audit of every request, written in batches so the log costs the apiserver little. */
function auditArgs(runDir: string): string[] {
  const policyPath = join(runDir, 'audit-policy.yaml');
  writeFileSync(
    policyPath,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      '- level: Metadata',
      '',
    ].join('\n'),
  );
  return [
    `--audit-policy-file=${policyPath}`,
    `--audit-log-path=${join(runDir, AUDIT_LOG)}`,
    '--audit-log-format=json',
    '--audit-log-mode=batch',
    '--audit-log-maxsize=0',
  ];
}
const START_ATTEMPTS = 5;

/**
 * Go-style durations as envtest reads them ("60s", "1m30s", "500ms"); a bare number is seconds.
 */
export function parseDuration(text: string | undefined, fallbackMs: number): number {
  if (!text) {
    return fallbackMs;
  }
  if (/^\d+(\.\d+)?$/.test(text)) {
    return Number(text) * 1000;
  }
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  let rest = text;
  const part = /^(\d+(?:\.\d+)?)(ms|s|m|h)/;
  while (rest.length > 0) {
    const match = part.exec(rest);
    if (!match) {
      throw new Error(`Cannot read "${text}" as a duration (e.g. 60s, 1m30s, 500ms)`);
    }
    total += Number(match[1]) * units[match[2]];
    rest = rest.slice(match[0].length);
  }
  return total;
}

function defaultLog(line: string): void {
  process.stderr.write(`[control-plane] ${line}\n`);
}

function httpStatus(
  url: string,
  options: { insecure?: boolean } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const onResponse = (res: import('node:http').IncomingMessage): void => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    };
    const req = url.startsWith('https:')
      ? httpsGet(url, { rejectUnauthorized: !options.insecure, timeout: 5_000 }, onResponse)
      : httpGet(url, { timeout: 5_000 }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
  });
}

class StartFailure extends Error {
  constructor(
    message: string,
    readonly portRace: boolean,
  ) {
    super(message);
  }
}

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
    const log = options.log ?? defaultLog;
    const startTimeoutMs =
      options.startTimeoutMs ?? parseDuration(process.env.KUBEBUILDER_CONTROLPLANE_START_TIMEOUT, 60_000);
    const stopTimeoutMs =
      options.stopTimeoutMs ?? parseDuration(process.env.KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT, 20_000);
    const attachOutput =
      options.attachOutput ?? process.env.KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT === 'true';
    const binaries = options.binaries ?? (await findControlPlaneBinaries(log));
    for (const [name, found] of Object.entries(binaries)) {
      if (found) {
        log(`${name}: ${found.path} (from ${found.source})`);
      }
    }
    installExitHandler();
    for (let attempt = 1; ; attempt++) {
      try {
        const plane = await ControlPlane.startOnce({
          ...options,
          binaries,
          log,
          startTimeoutMs,
          stopTimeoutMs,
          attachOutput,
        });
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
    options: ControlPlaneOptions & {
      binaries: ControlPlaneBinaries;
      log: (line: string) => void;
      startTimeoutMs: number;
      stopTimeoutMs: number;
      attachOutput: boolean;
    },
  ): Promise<ControlPlane> {
    const { binaries, log, startTimeoutMs, attachOutput } = options;
    const began = Date.now();
    const runDir = mkdtempSync(join(tmpdir(), 'aro-control-plane-'));
    const pki = join(runDir, 'pki');
    mkdirSync(pki, { mode: 0o700 });
    const pidFile = join(runDir, 'pids');
    const started: ManagedProcess[] = [];
    const reaper = await startReaper(runDir, pidFile);

    const fail = async (message: string, culprit?: ManagedProcess): Promise<never> => {
      const logs = (culprit ? [culprit] : started)
        .map((p) => `--- last lines of ${p.name} (${p.logFile}) ---\n${p.logTail(40)}`)
        .join('\n');
      const portRace = started.some((p) => /address already in use/i.test(p.logTail(200)));
      for (const p of [...started].reverse()) {
        await p.stop(5_000);
      }
      await reaper.stop(1_000);
      rmSync(runDir, { recursive: true, force: true });
      throw new StartFailure(`${message}\n${logs}`, portRace);
    };

    /** Polls `ready` until it holds, failing early (with the process's log) if the process exits. */
    const waitUntil = async (
      proc: ManagedProcess,
      description: string,
      ready: () => Promise<boolean>,
    ): Promise<void> => {
      const deadline = Date.now() + startTimeoutMs;
      let lastError = '';
      while (Date.now() < deadline) {
        if (!proc.running) {
          const exit = proc.exitStatusOrUndefined;
          return fail(
            `${proc.name} exited (code ${exit?.code}, signal ${exit?.signal}) before ${description}`,
            proc,
          );
        }
        try {
          if (await ready()) {
            return;
          }
        } catch (err) {
          lastError = (err as Error).message;
        }
        await sleep(100);
      }
      return fail(
        `Timed out after ${startTimeoutMs} ms waiting for ${description}${lastError ? ` (last error: ${lastError})` : ''}. ` +
          'Raise KUBEBUILDER_CONTROLPLANE_START_TIMEOUT on a slow machine.',
        proc,
      );
    };

    const startProcess = async (name: string, binary: string, args: string[]): Promise<ManagedProcess> => {
      const p = await ManagedProcess.start({
        name,
        binary,
        args,
        logFile: join(runDir, `${name}.log`),
        attachOutput,
        pidFile,
      });
      started.push(p);
      return p;
    };

    // Everything from here on cleans up through `fail`, whatever goes wrong: a spawn error or a full disk
    // must not leave processes or the run folder behind until the reaper notices.
    const boot = async (): Promise<ControlPlane> => {
      const { servingCa, serving, clientCa, admin, sa } = await createPki(pki);
      const [etcdClientPort, etcdPeerPort, apiPort, kcmPort] = await freePorts(4);

      // etcd: a single member with its data in the run folder. --unsafe-no-fsync trades crash safety, which
      // a throwaway test store does not need, for several times faster writes on slow disks.
      const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
      const peerUrl = `http://127.0.0.1:${etcdPeerPort}`;
      const etcd = await startProcess('etcd', binaries.etcd.path, [
        '--name=default',
        `--data-dir=${join(runDir, 'etcd-data')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--unsafe-no-fsync=true',
        '--auto-compaction-retention=1',
        '--log-level=warn',
      ]);
      await waitUntil(etcd, `etcd to report healthy at ${etcdUrl}/health`, async () => {
        const res = await httpStatus(`${etcdUrl}/health`);
        return res.status === 200 && res.body.includes('"true"');
      });

      const since = (): string => `${((Date.now() - began) / 1000).toFixed(1)} s`;
      log(`etcd healthy after ${since()}`);

      const server = `https://127.0.0.1:${apiPort}`;
      const apiserver = await startProcess('kube-apiserver', binaries.kubeApiserver.path, [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        // Without it the apiserver looks for the default-route interface and refuses to start on a host
        // that has no default route, which is what these machines are.
        '--advertise-address=127.0.0.1',
        `--secure-port=${apiPort}`,
        `--cert-dir=${pki}`,
        `--tls-cert-file=${serving.certPath}`,
        `--tls-private-key-file=${serving.keyPath}`,
        `--client-ca-file=${clientCa.certPath}`,
        '--authorization-mode=RBAC',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        // No service-account controller runs, so the default ServiceAccount the plugin insists on never exists.
        '--disable-admission-plugins=ServiceAccount',
        `--service-account-issuer=${server}/`,
        `--service-account-key-file=${sa.publicKeyPath}`,
        `--service-account-signing-key-file=${sa.privateKeyPath}`,
        // The `kubernetes` Service's endpoints would point at 127.0.0.1, which Endpoints validation refuses,
        // so the reconciler would log an error every few seconds for nothing.
        '--endpoint-reconciler-type=none',
        ...(options.auditLog ? auditArgs(runDir) : []),
      ]);
      const kubeconfigPath = join(runDir, 'kubeconfig');
      writeKubeconfig(kubeconfigPath, server, servingCa.certPath, admin.certPath, admin.keyPath);
      const kc = new KubeConfig();
      kc.loadFromFile(kubeconfigPath);
      await waitUntil(apiserver, `kube-apiserver to answer /healthz at ${server}`, async () => {
        const res = await kubeRequest(kc, { path: '/healthz', timeoutMs: 5_000 });
        return res.status === 200;
      });
      // /healthz turns green before the bootstrap controller has created the system namespaces; a test that
      // starts in that gap would find no `default` namespace.
      await waitUntil(apiserver, 'the default namespace to exist', async () => {
        const res = await kubeRequest(kc, { path: '/api/v1/namespaces/default', timeoutMs: 5_000 });
        return res.status === 200;
      });

      log(`kube-apiserver ready after ${since()}`);

      let controllerManager: ManagedProcess | undefined;
      if (options.withoutControllerManager) {
        log(
          '!!! running WITHOUT kube-controller-manager, as asked: no garbage collection, no namespace deletion',
        );
      } else if (binaries.kubeControllerManager) {
        controllerManager = await startProcess(
          'kube-controller-manager',
          binaries.kubeControllerManager.path,
          [
            `--kubeconfig=${kubeconfigPath}`,
            `--authentication-kubeconfig=${kubeconfigPath}`,
            `--authorization-kubeconfig=${kubeconfigPath}`,
            // Only what a cluster without kubelets needs from it: cascading deletes through ownerReferences,
            // and namespaces that finish deleting.
            '--controllers=garbagecollector,namespace',
            '--leader-elect=false',
            '--bind-address=127.0.0.1',
            // A real port rather than --secure-port=0, so that /healthz tells when it is up.
            `--secure-port=${kcmPort}`,
            `--cert-dir=${join(runDir, 'kcm-certs')}`,
            '--use-service-account-credentials=false',
            '--kube-api-qps=1000',
            '--kube-api-burst=2000',
          ],
        );
        const kcm = controllerManager;
        await waitUntil(kcm, `kube-controller-manager to answer /healthz on port ${kcmPort}`, async () => {
          const res = await httpStatus(`https://127.0.0.1:${kcmPort}/healthz`, { insecure: true });
          return res.status === 200;
        });
        log(`kube-controller-manager ready after ${since()}`);
      }

      let crds: InstalledCrd[];
      try {
        crds = await installCrds(kc, options.crdPaths ?? [], { timeoutMs: startTimeoutMs });
      } catch (err) {
        return fail(`Installing the CRDs failed: ${(err as Error).message}`, apiserver);
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
          reaper: reaper.pid,
        },
      };
      writeFileSync(join(runDir, INFO_FILE), JSON.stringify(info, null, 2));
      const plane = new ControlPlane(info, started, reaper, options.stopTimeoutMs, log);
      running.add(plane);
      log(
        `up in ${since()} at ${server} ` +
          `(${crds.length} CRDs${controllerManager ? ', with kube-controller-manager' : ', WITHOUT kube-controller-manager'}); run folder ${runDir}`,
      );
      return plane;
    };
    try {
      return await boot();
    } catch (err) {
      if (err instanceof StartFailure) {
        throw err;
      }
      return fail(`Starting the control plane failed: ${(err as Error).message}`);
    }
  }

  /** Stops kcm, then the apiserver, then etcd (SIGTERM, SIGKILL after the stop timeout) and removes the run folder. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const began = Date.now();
      for (const [signal, handler] of this.signalHandlers) {
        process.removeListener(signal, handler);
      }
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

/** Serving CA + cert for 127.0.0.1/localhost, a client CA with the admin's cert, the service-account key pair. */
async function createPki(dir: string) {
  const servingCa = await createCertificateAuthority(dir, 'serving-ca', 'aro-test-serving-ca');
  const serving = await issueServingCertificate(servingCa, dir, 'apiserver');
  const clientCa = await createCertificateAuthority(dir, 'client-ca', 'aro-test-client-ca');
  const admin = await issueClientCertificate(clientCa, dir, 'admin', 'admin', ['system:masters']);
  const sa = await createServiceAccountKeyPair(dir);
  return { servingCa, serving, clientCa, admin, sa };
}

function writeKubeconfig(
  path: string,
  server: string,
  caPath: string,
  certPath: string,
  keyPath: string,
): void {
  const b64 = (file: string): string => readFileSync(file).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'envtest', cluster: { server, 'certificate-authority-data': b64(caPath) } }],
    users: [
      { name: 'admin', user: { 'client-certificate-data': b64(certPath), 'client-key-data': b64(keyPath) } },
    ],
    contexts: [{ name: 'envtest', context: { cluster: 'envtest', user: 'admin' } }],
    'current-context': 'envtest',
  };
  writeFileSync(path, dumpYaml(config), { mode: 0o600 });
}
