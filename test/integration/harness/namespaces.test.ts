import type { V1Namespace } from '@kubernetes/client-node';
import { KubeClient, NamespaceKind, isNotFound } from '@aro/kube';
import { createTestNamespace, testKubeConfig } from '../../harness';

const kube = () => new KubeClient(testKubeConfig());
/** Present and not being deleted (kube-controller-manager may already have finished deleting it). */
const alive = (name: string) =>
  kube()
    .get<V1Namespace>(NamespaceKind, '', name)
    .then(
      (ns) => !ns.metadata?.deletionTimestamp,
      (err: unknown) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );

describe('namespaces made in a test', () => {
  let inTest: string;

  it('are there during the test', async () => {
    inTest = await createTestNamespace('in-test');
    expect(await alive(inTest)).toBe(true);
  });

  it('are being deleted once it is over', async () => {
    expect(await alive(inTest)).toBe(false);
  });
});

describe('namespaces made in beforeAll of a later block', () => {
  let shared: string;

  beforeAll(async () => {
    shared = await createTestNamespace('shared');
  });

  it('outlive the first test of the block', async () => {
    expect(await alive(shared)).toBe(true);
  });

  it('are still there for the next test', async () => {
    expect(await alive(shared)).toBe(true);
  });
});
