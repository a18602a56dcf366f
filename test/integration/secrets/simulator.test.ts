import { generateKeyPairSync } from 'node:crypto';
import { isUnauthorized, type MultiClient } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import type { SecretResolver } from '@aro/secrets';
import { startSimulator, type RunningSimulator } from '../../../apps/simulator/src';
import { createTestNamespace } from '../../harness';
import {
  holderIn,
  newKubeClient,
  newMultiClient,
  newResolver,
  putSecret,
  replaceSecretData,
} from './support';

/**
 * The whole route a controller takes: Secret in the API server -> resolver -> MultiClient -> a call to
 * the (simulated) Actions service, which accepts only the credentials the Secret holds.
 */
describe('credentials resolved from Secrets authenticate against the Actions service', () => {
  let sim: RunningSimulator;
  let kube: KubeClient;
  let multiClient: MultiClient;
  let resolver: SecretResolver;
  let ns: string;

  beforeAll(async () => {
    sim = await startSimulator();
    kube = newKubeClient();
    multiClient = newMultiClient();
    resolver = newResolver(kube, multiClient);
    ns = await createTestNamespace('secrets-simulator');
  });

  afterAll(async () => {
    await multiClient.close();
    kube.close();
    await sim.stop();
  });

  it('reaches the service with a PAT from the Secret', async () => {
    await putSecret(kube, ns, 'pat', { github_token: 'ghp_simulator' });
    const client = await resolver.getActionsClient(
      holderIn(ns, { githubConfigSecret: 'pat', githubConfigUrl: sim.configUrl({ org: 'octo' }) }),
    );
    await expect(client.getRunnerGroupByName('Default')).resolves.toMatchObject({ name: 'Default' });
  });

  it('reaches the service as a GitHub App whose private key came through the Secret intact', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const app = sim.registerApp({
      publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    });
    const installationId = sim.installApp(app.appId, { org: 'octo' });
    await putSecret(kube, ns, 'app', {
      github_app_id: app.clientId,
      github_app_installation_id: String(installationId),
      github_app_private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    });
    const client = await resolver.getActionsClient(
      holderIn(ns, { githubConfigSecret: 'app', githubConfigUrl: sim.configUrl({ org: 'octo' }) }),
    );
    await expect(client.getRunnerGroupByName('Default')).resolves.toMatchObject({ name: 'Default' });
  });

  it('uses the rotated token after the Secret changes', async () => {
    await putSecret(kube, ns, 'rotated', { github_token: 'ghp_simulator' });
    const holder = holderIn(ns, {
      githubConfigSecret: 'rotated',
      githubConfigUrl: sim.configUrl({ org: 'octo' }),
    });
    await expect(
      (await resolver.getActionsClient(holder)).getRunnerGroupByName('Default'),
    ).resolves.toBeDefined();

    await replaceSecretData(kube, ns, 'rotated', { github_token: 'ghp_revoked' });
    const rotated = await (await resolver.getActionsClient(holder)).getRunnerGroupByName('Default').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isUnauthorized(rotated)).toBe(true);
  });
});
