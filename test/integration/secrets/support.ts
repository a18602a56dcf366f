import { generateKeyPairSync } from 'node:crypto';
import { MultiClient } from '@aro/actions';
import { ConfigMapKind, KubeClient, SecretKind } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import { GitHubConfigHolder, SecretResolutionError, SecretResolver } from '@aro/secrets';
import { Registry } from 'prom-client';
import { TEST_CA_A } from '../../../libs/secrets/src/testing/certificates';
import { testKubeConfig } from '../../harness';

/** Self-signed test CA (P-256); a public certificate, no key kept. */
export const TEST_CA = TEST_CA_A;

export function rsaPrivateKeyPem(): string {
  return generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  }) as string;
}

export function newKubeClient(): KubeClient {
  return new KubeClient(testKubeConfig(), { logger: silentLogger, requestTimeoutMs: 10_000 });
}

export function newMultiClient(): MultiClient {
  return new MultiClient({ logger: silentLogger, registry: new Registry() });
}

export function newResolver(kube: KubeClient, multiClient = newMultiClient()): SecretResolver {
  return new SecretResolver({ kube, multiClient, logger: silentLogger, timeoutMs: 20_000 });
}

/** Written through `stringData`, so the API server does the base64 encoding the resolver must undo. */
export async function putSecret(
  kube: KubeClient,
  namespace: string,
  name: string,
  stringData: Record<string, string>,
): Promise<void> {
  await kube.create(SecretKind, { metadata: { namespace, name }, stringData });
}

/** Replaces the Secret's whole data, as `kubectl apply` of a rotated Secret would. */
export async function replaceSecretData(
  kube: KubeClient,
  namespace: string,
  name: string,
  stringData: Record<string, string>,
): Promise<void> {
  const data = Object.fromEntries(
    Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  );
  const live = await kube.get<{ metadata?: { resourceVersion?: string } }>(SecretKind, namespace, name);
  await kube.replace(SecretKind, {
    metadata: { namespace, name, resourceVersion: live.metadata?.resourceVersion },
    data,
  });
}

export async function putConfigMap(
  kube: KubeClient,
  namespace: string,
  name: string,
  data: Record<string, string>,
): Promise<void> {
  await kube.create(ConfigMapKind, { metadata: { namespace, name }, data });
}

export function holderIn(namespace: string, overrides: Partial<GitHubConfigHolder> = {}): GitHubConfigHolder {
  return {
    namespace,
    githubConfigUrl: 'https://github.com/aro-test-org',
    githubConfigSecret: 'gh-config',
    name: 'AutoscalingRunnerSet test-set',
    ...overrides,
  };
}

/** The SecretResolutionError a promise rejects with; fails the test if it resolves or throws anything else. */
export async function resolutionError(p: Promise<unknown>): Promise<SecretResolutionError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SecretResolutionError) return e;
    throw e;
  }
  throw new Error('expected a SecretResolutionError, but the call succeeded');
}
