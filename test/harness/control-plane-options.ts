import type { ControlPlaneBinaries } from './binaries';
import type { InstalledCrd } from './crds';
import type { RealNodeInfo } from './node/real-node';

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
  /** The real node, when started with `node: true`. */
  node?: RealNodeInfo;
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
  /**
   * Start a real node beside it (test/harness/node): containerd, a kubelet and kube-scheduler in a
   * namespace of their own, the images built from the Dockerfile imported. Installs and builds what is
   * missing first (minutes, once). Throws NodeUnavailable when this machine cannot run one.
   */
  node?: boolean;
}

/** The options with every default filled in, as envtest reads them from its environment variables. */
export type ResolvedControlPlaneOptions = ControlPlaneOptions & {
  log: (line: string) => void;
  startTimeoutMs: number;
  stopTimeoutMs: number;
  attachOutput: boolean;
};

export function resolveControlPlaneOptions(options: ControlPlaneOptions): ResolvedControlPlaneOptions {
  return {
    ...options,
    log: options.log ?? defaultLog,
    startTimeoutMs:
      options.startTimeoutMs ?? parseDuration(process.env.KUBEBUILDER_CONTROLPLANE_START_TIMEOUT, 60_000),
    stopTimeoutMs:
      options.stopTimeoutMs ?? parseDuration(process.env.KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT, 20_000),
    attachOutput: options.attachOutput ?? process.env.KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT === 'true',
  };
}

function defaultLog(line: string): void {
  process.stderr.write(`[control-plane] ${line}\n`);
}

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
