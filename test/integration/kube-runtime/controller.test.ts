import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import {
  ConfigMapKind,
  ControllerBuilder,
  SecretKind,
  done,
  isNotFound,
  objectPredicate,
  resourceVersionChangedPredicate,
  type KubeClient,
  type Reconciler,
} from '@aro/kube';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { adminClient, createConfigMap, metricValue, newRuntime, type Runtime } from './support';

/*
 * A small controller against the real API server: a "parent" ConfigMap owns a child Secret; the
 * reconciler creates the child and copies the child's `aro.test/version` label into the parent's
 * `aro.test/child-version` annotation. A parent labelled `aro.test/fail-times: N` makes the
 * reconciler throw N times first.
 */

const CHILD_VERSION = 'aro.test/child-version';
const READY = 'aro.test/ready';

function parentReconciler(client: KubeClient): Reconciler {
  const failures = new Map<string, number>();
  return {
    async reconcile(req, { log }) {
      let parent: V1ConfigMap;
      try {
        parent = await client.get<V1ConfigMap>(ConfigMapKind, req.namespace, req.name);
      } catch (e) {
        if (isNotFound(e)) return done;
        throw e;
      }
      const key = `${req.namespace}/${req.name}`;
      const failTimes = Number(parent.metadata?.labels?.['aro.test/fail-times'] ?? '0');
      const failed = failures.get(key) ?? 0;
      if (failed < failTimes) {
        failures.set(key, failed + 1);
        throw new Error(`planned failure ${failed + 1} of ${failTimes} for ${key}`);
      }

      const childName = `${req.name}-child`;
      let child: V1Secret;
      try {
        child = await client.get<V1Secret>(SecretKind, req.namespace, childName);
      } catch (e) {
        if (!isNotFound(e)) throw e;
        child = await client.create<V1Secret>(SecretKind, {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: {
            namespace: req.namespace,
            name: childName,
            labels: { 'aro.test/version': '1' },
            ownerReferences: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                name: req.name,
                uid: parent.metadata!.uid!,
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
          },
          type: 'Opaque',
        });
        log.info('Created the child secret');
      }
      const version = child.metadata?.labels?.['aro.test/version'] ?? '';
      const annotations = parent.metadata?.annotations ?? {};
      if (annotations[CHILD_VERSION] !== version || annotations[READY] !== 'true') {
        await client.mergePatch(ConfigMapKind, req.namespace, req.name, {
          metadata: { annotations: { [CHILD_VERSION]: version, [READY]: 'true' } },
        });
      }
      return done;
    },
  };
}

async function annotations(
  client: KubeClient,
  namespace: string,
  name: string,
): Promise<Record<string, string>> {
  return (await client.get<V1ConfigMap>(ConfigMapKind, namespace, name)).metadata?.annotations ?? {};
}

describe('a controller built with for / owns / predicates', () => {
  let admin: KubeClient;
  let runtime: Runtime;
  let ns: string;

  beforeAll(async () => {
    admin = adminClient();
    ns = await createTestNamespace('kube-runtime-controller');
    runtime = newRuntime(testKubeConfig(), ns, false);
    new ControllerBuilder(runtime.manager, 'parent')
      .for(
        ConfigMapKind,
        objectPredicate<V1ConfigMap>((cm) => cm.metadata?.labels?.['aro.test/role'] === 'parent'),
      )
      .owns(SecretKind)
      .withEventFilter(resourceVersionChangedPredicate)
      // One worker: a failing key must not hold up the others, and the worker must outlive the failures.
      .withOptions({ maxConcurrentReconciles: 1 })
      .complete(parentReconciler(runtime.client));
    await runtime.manager.start();
  });

  afterAll(async () => {
    await runtime.stop();
    admin.close();
  });

  it('reconciles a parent, creating its owned child', async () => {
    await createConfigMap(admin, ns, 'p1', { metadata: { labels: { 'aro.test/role': 'parent' } } });
    await waitFor(async () => (await annotations(admin, ns, 'p1'))[CHILD_VERSION] === '1', {
      description: `parent ${ns}/p1 to record its child's version 1`,
    });
    const child = await admin.get<V1Secret>(SecretKind, ns, 'p1-child');
    expect(child.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'ConfigMap',
      name: 'p1',
      controller: true,
    });
    expect(runtime.manager.health()).toEqual({ healthy: true });
  });

  it('enqueues the owner when an owned object changes', async () => {
    await createConfigMap(admin, ns, 'p2', { metadata: { labels: { 'aro.test/role': 'parent' } } });
    await waitFor(async () => (await annotations(admin, ns, 'p2'))[CHILD_VERSION] === '1', {
      description: `parent ${ns}/p2 to record its child's version 1`,
    });
    // Only the child changes; the parent hears of it through the owner mapping.
    await admin.mergePatch(SecretKind, ns, 'p2-child', { metadata: { labels: { 'aro.test/version': '2' } } });
    await waitFor(async () => (await annotations(admin, ns, 'p2'))[CHILD_VERSION] === '2', {
      description: `parent ${ns}/p2 to record its child's version 2`,
    });
  });

  it('ignores objects its predicates filter out', async () => {
    await createConfigMap(admin, ns, 'bystander');
    // A parent created afterwards is reconciled; by then the bystander's event had its chance.
    await createConfigMap(admin, ns, 'p3', { metadata: { labels: { 'aro.test/role': 'parent' } } });
    await waitFor(async () => (await annotations(admin, ns, 'p3'))[READY] === 'true', {
      description: `parent ${ns}/p3 to be reconciled`,
    });
    expect(await annotations(admin, ns, 'bystander')).toEqual({});
    await expect(admin.get(SecretKind, ns, 'bystander-child')).rejects.toThrow(/not found/);
  });

  it('retries a failing reconcile with backoff, and the worker goes on serving other keys', async () => {
    const errorsBefore = await metricValue(runtime.registry, 'controller_runtime_reconcile_errors_total', {
      controller: 'parent',
    });
    await createConfigMap(admin, ns, 'flaky', {
      metadata: { labels: { 'aro.test/role': 'parent', 'aro.test/fail-times': '3' } },
    });
    await waitFor(async () => (await annotations(admin, ns, 'flaky'))[READY] === 'true', {
      description: `parent ${ns}/flaky to be reconciled after three failures`,
    });
    expect(
      (await metricValue(runtime.registry, 'controller_runtime_reconcile_errors_total', {
        controller: 'parent',
      })) - errorsBefore,
    ).toBe(3);
    expect(
      await metricValue(runtime.registry, 'workqueue_retries_total', { name: 'parent' }),
    ).toBeGreaterThanOrEqual(3);
    // No worker is left hanging in a reconcile. The write that marked the parent ready also wakes a
    // last reconcile of it, which may still be running when the annotation is seen: wait it out.
    await waitFor(
      async () =>
        (await metricValue(runtime.registry, 'controller_runtime_active_workers', {
          controller: 'parent',
        })) === 0,
      { description: 'every worker of the parent controller idle' },
    );

    await createConfigMap(admin, ns, 'after-flaky', { metadata: { labels: { 'aro.test/role': 'parent' } } });
    await waitFor(async () => (await annotations(admin, ns, 'after-flaky'))[READY] === 'true', {
      description: `parent ${ns}/after-flaky to be reconciled by the surviving worker`,
    });
    expect(runtime.manager.health()).toEqual({ healthy: true });
  });
});
