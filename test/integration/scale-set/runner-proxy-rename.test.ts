import type { V1Secret } from '@kubernetes/client-node';
import {
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
  legacyRunnerProxySecretName,
  runnerProxySecretName,
} from '@aro/api';
import { SecretKind } from '@aro/kube';
import { waitFor } from '../../harness';
import {
  createRunnerSet,
  createScaleSetOnService,
  live,
  scaleSetSuite,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

/*
 * The runner proxy Secret is named as upstream names it. An earlier ARO named it otherwise, and the
 * runners it created keep that name in `spec.proxySecretRef` (their pods read the proxy from it), so
 * after an upgrade the old Secret must outlive every runner pointing at it, and only those.
 */
describe('Runner proxy Secret renamed to upstream’s name', () => {
  const suite = scaleSetSuite();

  it('keeps the Secret under the earlier name while a runner points at it, then deletes it', async () => {
    const first = await suite.start();
    const name = uniqueName('ers');
    const scaleSetId = await createScaleSetOnService(suite.sim, name);
    await first.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'proxy-creds', namespace: first.namespace },
      stringData: { username: 'user', password: 'secret' },
    });
    await createRunnerSet(first, name, scaleSetId, (s) => {
      s.spec.ephemeralRunnerSpec.proxy = {
        http: { url: 'http://proxy.example:3128', credentialSecretRef: 'proxy-creds' },
        // The Actions service (the simulator) is reached directly, so the runners register.
        noProxy: ['127.0.0.1'],
      };
    });
    const current = runnerProxySecretName(name, first.namespace);
    const earlier = legacyRunnerProxySecretName(name, first.namespace);
    expect(current).not.toBe(earlier);
    await first.scale(name, 1, 1);
    const [old] = await waitForRunners(first, name, (r) => live(r).length === 1, 'a runner');

    // What an earlier ARO left: its Secret, and a runner pointing at it. The controller that starts
    // next finds both on its first pass of the set.
    await first.stop();
    const secret = await first.read<V1Secret>(SecretKind, current);
    await first.kube.create<V1Secret>(SecretKind, {
      metadata: { name: earlier, namespace: first.namespace },
      data: secret?.data,
    });
    const oldName = old.metadata?.name ?? '';
    await first.kube.mergePatch(EphemeralRunnerKind, first.namespace, oldName, {
      spec: { proxySecretRef: earlier },
    });

    const f = await suite.start({ namespacesOf: first });
    // A second runner is proof the controller passed over the set since it started.
    await f.scale(name, 2, 2);
    const two = await waitForRunners(f, name, (r) => live(r).length === 2, 'a second runner');
    const added = two.find((r) => r.metadata?.name !== oldName);
    expect(added?.spec.proxySecretRef).toBe(current);
    expect(await f.read(SecretKind, earlier)).toBeDefined();
    expect(await f.read(SecretKind, current)).toBeDefined();

    // The last runner using the earlier name goes: so does that Secret; the current one stays.
    await f.kube.delete(EphemeralRunnerKind, f.namespace, oldName);
    await waitFor(async () => (await f.read(SecretKind, earlier)) === undefined, {
      description: `the Secret ${earlier} gone once no runner points at it`,
      timeoutMs: 30_000,
    });
    expect(await f.read(SecretKind, current)).toBeDefined();

    await f.kube.delete(EphemeralRunnerSetKind, f.namespace, name);
    await waitFor(async () => (await f.runnerSet(name)) === undefined, { description: 'the set gone' });
    expect(await f.read(SecretKind, current)).toBeUndefined();
  });
});
