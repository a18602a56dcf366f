import { randomBytes } from 'node:crypto';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { testKubeConfig } from './context';

interface CreatedNamespace {
  name: string;
  /** Created inside a test (deleted after it) rather than in beforeAll (deleted after the file). */
  inTest: boolean;
}

const created: CreatedNamespace[] = [];

/** Jest's name of the running test, or undefined in beforeAll/afterAll and outside jest. */
function currentTestName(): string | undefined {
  const state = typeof expect === 'function' ? expect.getState() : undefined;
  return state?.currentTestName;
}

/**
 * Creates a namespace with a unique name (`<prefix>-<random>`) and returns the name. It is deleted after the
 * test that created it (or after the file, when created in beforeAll), best-effort and without waiting:
 * kube-controller-manager finishes the deletion in the background.
 */
export async function createTestNamespace(prefix = 'test'): Promise<string> {
  const stem =
    prefix
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50) || 'test';
  const name = `${stem}-${randomBytes(4).toString('hex')}`;
  const testName = currentTestName();
  await testKubeConfig()
    .makeApiClient(CoreV1Api)
    .createNamespace({
      body: {
        metadata: {
          name,
          labels: { 'aro.test/namespace': 'true' },
          // Which test made it, for whoever looks at a reused control plane with kubectl afterwards.
          annotations: testName ? { 'aro.test/created-by': testName.slice(0, 1000) } : {},
        },
      },
    });
  created.push({ name, inTest: insideTest });
  return name;
}

async function deleteNamespaces(which: (ns: CreatedNamespace) => boolean): Promise<void> {
  const doomed = created.filter(which);
  if (doomed.length === 0) {
    return;
  }
  const api = testKubeConfig().makeApiClient(CoreV1Api);
  await Promise.all(
    doomed.map(async (ns) => {
      created.splice(created.indexOf(ns), 1);
      try {
        await api.deleteNamespace({ name: ns.name });
      } catch (err) {
        if (!(err instanceof ApiException && err.code === 404)) {
          process.stderr.write(`could not delete test namespace ${ns.name}: ${(err as Error).message}\n`);
        }
      }
    }),
  );
}

/*
 * Whether a test (or a beforeEach of it) is running. Jest's currentTestName is not enough: in a
 * beforeAll of a second describe it still names the previous block's last test, which made a
 * namespace meant for the whole block go after its first test.
 */
let insideTest = false;

// Registered when a test file imports the harness, so no test has to remember its own cleanup.
// Jest runs these outermost hooks first before a test and last after it.
if (typeof beforeEach === 'function' && typeof afterEach === 'function' && typeof afterAll === 'function') {
  beforeEach(() => {
    insideTest = true;
  });
  afterEach(async () => {
    insideTest = false;
    await deleteNamespaces((ns) => ns.inTest);
  });
  afterAll(() => deleteNamespaces(() => true));
}
