import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { createTestNamespace, installedCrds, testKubeConfig } from '../../harness';

jest.setTimeout(60_000);

const group = 'actions.github.com';
const version = 'v1alpha1';
const apiVersion = `${group}/${version}`;

const ephemeralRunnerSpec = {
  githubConfigUrl: 'https://github.com/example-org/example-repo',
  githubConfigSecret: 'github-config',
  runnerScaleSetId: 12,
  spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
};

/** One valid object of each kind, as the controllers will write them. */
const validObjects: Record<string, { plural: string; body: Record<string, unknown> }> = {
  EphemeralRunner: { plural: 'ephemeralrunners', body: { spec: ephemeralRunnerSpec } },
  EphemeralRunnerSet: {
    plural: 'ephemeralrunnersets',
    body: { spec: { replicas: 2, patchID: 0, ephemeralRunnerSpec } },
  },
  AutoscalingRunnerSet: {
    plural: 'autoscalingrunnersets',
    body: {
      spec: {
        githubConfigUrl: 'https://github.com/example-org',
        githubConfigSecret: 'github-config',
        minRunners: 0,
        maxRunners: 5,
        template: {
          spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }] },
        },
      },
    },
  },
  AutoscalingListener: {
    plural: 'autoscalinglisteners',
    body: {
      spec: {
        githubConfigUrl: 'https://github.com/example-org',
        githubConfigSecret: 'github-config',
        runnerScaleSetId: 12,
        autoscalingRunnerSetNamespace: 'arc-runners',
        autoscalingRunnerSetName: 'arc-runner-set',
        ephemeralRunnerSetName: 'arc-runner-set-abcde',
        maxRunners: 5,
        minRunners: 0,
        image: 'ghcr.io/example/aro-listener:latest',
      },
    },
  },
};

function apiError(err: unknown): { code: number; message: string } {
  if (!(err instanceof ApiException)) {
    throw err;
  }
  const body = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as { message?: string };
  return { code: err.code, message: body?.message ?? '' };
}

describe('the ARC CRDs installed from libs/api/crds', () => {
  const objects = testKubeConfig().makeApiClient(CustomObjectsApi);

  it('are all installed, Established and served as actions.github.com/v1alpha1', () => {
    const kinds = installedCrds().filter(
      (crd) => crd.group === group && crd.servedVersions.includes(version),
    );
    expect(kinds.map((crd) => crd.kind).sort()).toEqual(
      ['AutoscalingListener', 'AutoscalingRunnerSet', 'EphemeralRunner', 'EphemeralRunnerSet'].sort(),
    );
    expect(kinds.every((crd) => crd.namespaced)).toBe(true);
  });

  it.each(Object.entries(validObjects))(
    'accept a valid %s and read it back unchanged',
    async (kind, { plural, body }) => {
      const namespace = await createTestNamespace(`crd-${kind}`);
      const name = `valid-${kind.toLowerCase()}`;
      await objects.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        body: { apiVersion, kind, metadata: { name }, ...body },
      });
      const read = (await objects.getNamespacedCustomObject({ group, version, namespace, plural, name })) as {
        spec: unknown;
      };
      expect(read.spec).toEqual(body.spec);
    },
  );

  it('refuse an EphemeralRunner whose spec.runnerScaleSetId is not an integer, with 422', async () => {
    const namespace = await createTestNamespace('crd-invalid');
    const create = objects.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'ephemeralrunners',
      body: {
        apiVersion,
        kind: 'EphemeralRunner',
        metadata: { name: 'wrong-type' },
        spec: { ...ephemeralRunnerSpec, runnerScaleSetId: 'twelve' },
      },
    });
    const error = apiError(
      await create.then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    expect(error.code).toBe(422);
    expect(error.message).toMatch(/spec\.runnerScaleSetId/);
  });

  it('refuse an EphemeralRunner without spec.githubConfigUrl, with 422', async () => {
    const namespace = await createTestNamespace('crd-invalid');
    const { githubConfigUrl: _omitted, ...withoutUrl } = ephemeralRunnerSpec;
    const create = objects.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'ephemeralrunners',
      body: { apiVersion, kind: 'EphemeralRunner', metadata: { name: 'no-url' }, spec: withoutUrl },
    });
    const error = apiError(
      await create.then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    expect(error.code).toBe(422);
    expect(error.message).toMatch(/spec\.githubConfigUrl: Required value/);
  });

  /** Creates the valid AutoscalingRunnerSet with `change` over its spec: 201, or the refusal. */
  async function createScaleSet(change: Record<string, unknown>): Promise<{ code: number; message: string }> {
    const namespace = await createTestNamespace('crd-rules');
    const ars = validObjects.AutoscalingRunnerSet.body as { spec: Record<string, unknown> };
    return objects
      .createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: 'autoscalingrunnersets',
        body: {
          apiVersion,
          kind: 'AutoscalingRunnerSet',
          metadata: { name: 'rules' },
          spec: { ...ars.spec, ...change },
        },
      })
      .then(
        () => ({ code: 201, message: '' }),
        (err: unknown) => apiError(err),
      );
  }

  // The refusals name the field and say what to change, as `kubectl apply` prints them.
  it.each([
    [
      'minRunners above maxRunners',
      { minRunners: 3, maxRunners: 1 },
      422,
      'spec.minRunners',
      'minRunners must be less than or equal to maxRunners',
    ],
    ['minRunners equal to maxRunners', { minRunners: 2, maxRunners: 2 }, 201, '', ''],
    ['minRunners alone', { minRunners: 3, maxRunners: undefined }, 201, '', ''],
    [
      'a runner pod template without a container named runner',
      { template: { spec: { containers: [{ name: 'main', image: 'busybox' }] } } },
      422,
      'spec.template.spec.containers',
      "needs a container named 'runner'",
    ],
  ])(
    'take or refuse an AutoscalingRunnerSet with %s (the CRD rules)',
    async (_label, change, code, field, says) => {
      const outcome = await createScaleSet(change);
      expect(outcome.code).toBe(code);
      expect(outcome.message).toContain(field);
      expect(outcome.message).toContain(says);
    },
  );

  it.each(Object.entries(validObjects))('refuse a %s without a spec, with 422', async (kind, { plural }) => {
    const namespace = await createTestNamespace('crd-no-spec');
    const create = objects.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural,
      body: { apiVersion, kind, metadata: { name: 'no-spec' } },
    });
    const error = apiError(
      await create.then(
        () => undefined,
        (err: unknown) => err,
      ),
    );
    expect(error.code).toBe(422);
    expect(error.message).toMatch(/spec: Required value/);
  });

  it('ignore status written through the main resource and keep status written through /status', async () => {
    const namespace = await createTestNamespace('crd-status');
    const name = 'status-subresource';
    const coordinates = { group, version, namespace, plural: 'ephemeralrunners', name };
    await objects.createNamespacedCustomObject({
      ...coordinates,
      body: {
        apiVersion,
        kind: 'EphemeralRunner',
        metadata: { name },
        spec: ephemeralRunnerSpec,
        status: { phase: 'Running' },
      },
    });
    const created = (await objects.getNamespacedCustomObject(coordinates)) as Record<string, unknown>;
    expect(created.status).toBeUndefined();

    await objects.replaceNamespacedCustomObject({
      ...coordinates,
      body: { ...created, status: { phase: 'Running' } },
    });
    const afterMainWrite = (await objects.getNamespacedCustomObject(coordinates)) as Record<string, unknown>;
    expect(afterMainWrite.status).toBeUndefined();

    await objects.replaceNamespacedCustomObjectStatus({
      ...coordinates,
      body: { ...afterMainWrite, status: { phase: 'Running', ready: true } },
    });
    const afterStatusWrite = (await objects.getNamespacedCustomObject(coordinates)) as { status?: unknown };
    expect(afterStatusWrite.status).toEqual({ phase: 'Running', ready: true });
  });
});
