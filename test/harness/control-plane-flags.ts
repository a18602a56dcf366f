import { join } from 'node:path';
import { auditArgs, type ControlPlanePki } from './control-plane-files';

/**
 * The command lines of the three control-plane processes, on loopback, with their data and certificates
 * in the run folder. Each flag that is not envtest's default says why it is there.
 */

/** The run folder all of the control plane's files live in. */
export interface RunFolder {
  runDir: string;
  pki: string;
}

/**
 * etcd: a single member with its data in the run folder. --unsafe-no-fsync trades crash safety, which a
 * throwaway test store does not need, for several times faster writes on slow disks.
 */
export function etcdArgs(folder: RunFolder, etcdUrl: string, peerUrl: string): string[] {
  return [
    '--name=default',
    `--data-dir=${join(folder.runDir, 'etcd-data')}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    '--unsafe-no-fsync=true',
    '--auto-compaction-retention=1',
    '--log-level=warn',
  ];
}

export function apiserverArgs(
  folder: RunFolder,
  certs: ControlPlanePki,
  etcdUrl: string,
  apiPort: number,
  auditLog: boolean,
): string[] {
  const server = `https://127.0.0.1:${apiPort}`;
  const { serving, clientCa, sa } = certs;
  return [
    `--etcd-servers=${etcdUrl}`,
    '--bind-address=127.0.0.1',
    // Without it the apiserver looks for the default-route interface and refuses to start on a host
    // that has no default route, which is what these machines are.
    '--advertise-address=127.0.0.1',
    `--secure-port=${apiPort}`,
    `--cert-dir=${folder.pki}`,
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
    ...(auditLog ? auditArgs(folder.runDir) : []),
  ];
}

export function controllerManagerArgs(folder: RunFolder, kubeconfigPath: string, kcmPort: number): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--authentication-kubeconfig=${kubeconfigPath}`,
    `--authorization-kubeconfig=${kubeconfigPath}`,
    // Only what a cluster without kubelets needs from it: cascading deletes through ownerReferences,
    // namespaces that finish deleting, and PodDisruptionBudget status (what the Eviction API decides by).
    '--controllers=garbagecollector,namespace,disruption',
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
    // A real port rather than --secure-port=0, so that /healthz tells when it is up.
    `--secure-port=${kcmPort}`,
    `--cert-dir=${join(folder.runDir, 'kcm-certs')}`,
    '--use-service-account-credentials=false',
    '--kube-api-qps=1000',
    '--kube-api-burst=2000',
  ];
}
