import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpYaml } from '@kubernetes/client-node';
import {
  createCertificateAuthority,
  createServiceAccountKeyPair,
  issueClientCertificate,
  issueServingCertificate,
  type KeyAndCertificate,
} from './pki';

/** What a control plane writes into its private run folder: PKI, admin kubeconfig, audit policy. */

export const INFO_FILE = 'control-plane.json';
export const AUDIT_LOG = 'audit.log';

export interface ControlPlanePki {
  servingCa: KeyAndCertificate;
  serving: KeyAndCertificate;
  clientCa: KeyAndCertificate;
  admin: KeyAndCertificate;
  sa: { publicKeyPath: string; privateKeyPath: string };
}

/** Serving CA + cert for 127.0.0.1/localhost, a client CA with the admin's cert, the service-account key pair. */
export async function createPki(
  dir: string,
  extraServingIps: readonly string[] = [],
): Promise<ControlPlanePki> {
  const servingCa = await createCertificateAuthority(dir, 'serving-ca', 'aro-test-serving-ca');
  const serving = await issueServingCertificate(servingCa, dir, 'apiserver', extraServingIps);
  const clientCa = await createCertificateAuthority(dir, 'client-ca', 'aro-test-client-ca');
  const admin = await issueClientCertificate(clientCa, dir, 'admin', 'admin', ['system:masters']);
  const sa = await createServiceAccountKeyPair(dir);
  return { servingCa, serving, clientCa, admin, sa };
}

export function writeKubeconfig(
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

/** Metadata-level audit of every request, written in batches so the log costs the apiserver little. */
export function auditArgs(runDir: string): string[] {
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
