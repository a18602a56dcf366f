import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EphemeralRunnerKind, type EphemeralRunner, type ResourceKind } from '@aro/api';
import {
  KubeApiError,
  KubeClient,
  KubeTransportError,
  EventKind,
  LazyCopy,
  LeaseKind,
  PodKind,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ignoreNotFound,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isGone,
  isInvalid,
  isNotFound,
  statusMessage,
  type WatchEvent,
} from '@aro/kube';
import {
  KubeConfig,
  type V1Lease,
  type V1Pod,
  type V1ResourceQuota,
  type V1Secret,
} from '@kubernetes/client-node';
import { createTestNamespace, kubeConfigForUser, testKubeConfig } from '../../harness';
import { compactEtcd } from './etcd';

jest.setTimeout(120_000);

const ResourceQuotaKind: ResourceKind = {
  group: '',
  version: 'v1',
  kind: 'ResourceQuota',
  plural: 'resourcequotas',
  namespaced: true,
};

function pod(namespace: string, name: string, extra: Partial<V1Pod['spec']> = {}): V1Pod {
  return {
    metadata: { name, namespace, labels: { app: 'kube-client-test' } },
    spec: { containers: [{ name: 'runner', image: 'ghcr.io/actions/actions-runner:latest' }], ...extra },
  };
}

function runner(namespace: string, name: string): EphemeralRunner {
  return {
    apiVersion: 'actions.github.com/v1alpha1',
    kind: 'EphemeralRunner',
    metadata: { name, namespace, finalizers: ['ephemeralrunner.actions.github.com/finalizer'] },
    spec: {
      githubConfigUrl: 'https://github.com/org/repo',
      githubConfigSecret: 'github-secret',
      runnerScaleSetId: 7,
      spec: { containers: [{ name: 'runner', image: 'runner:latest' }] },
    },
  };
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail');
}

describe('KubeClient against the API server', () => {
  let client: KubeClient;
  let ns: string;

  beforeAll(async () => {
    client = new KubeClient(testKubeConfig(), { fieldManager: 'aro-test' });
    ns = await createTestNamespace('kube-client');
  });

  afterAll(() => client.close());

  describe('pods', () => {
    it('creates, gets, lists by label, merge-patches, patches status, replaces and deletes a pod', async () => {
      const created = await client.create<V1Pod>(PodKind, pod(ns, 'p1'));
      expect(created.metadata?.uid).toBeTruthy();
      expect(created.kind).toBe('Pod');
      expect(created.metadata?.managedFields?.[0]?.manager).toBe('aro-test');

      const read = await client.get<V1Pod>(PodKind, ns, 'p1');
      expect(read.metadata?.uid).toBe(created.metadata?.uid);

      await client.create<V1Pod>(PodKind, {
        ...pod(ns, 'other'),
        metadata: { name: 'other', namespace: ns },
      });
      const listed = await client.list<V1Pod>(PodKind, {
        namespace: ns,
        labelSelector: 'app=kube-client-test',
      });
      expect(listed.map((p) => p.metadata?.name)).toEqual(['p1']);
      expect(listed[0].kind).toBe('Pod');
      expect(listed[0].apiVersion).toBe('v1');

      const patched = await client.mergePatch<V1Pod>(PodKind, ns, 'p1', {
        metadata: { labels: { app: null, extra: 'yes' }, annotations: { a: 'b' } },
      });
      expect(patched.metadata?.labels).toEqual({ extra: 'yes' });
      expect(patched.metadata?.annotations).toEqual({ a: 'b' });

      const withStatus = await client.mergePatchStatus<V1Pod>(PodKind, ns, 'p1', {
        status: { phase: 'Running', message: 'started by the test' },
      });
      expect(withStatus.status?.phase).toBe('Running');
      expect(withStatus.status?.message).toBe('started by the test');

      const replaced = await client.replace<V1Pod>(PodKind, {
        ...withStatus,
        metadata: { ...withStatus.metadata, labels: { replaced: 'true' } },
      });
      expect(replaced.metadata?.labels).toEqual({ replaced: 'true' });

      await client.delete(PodKind, ns, 'p1', { gracePeriodSeconds: 0 });
      expect(isNotFound(await caught(client.get(PodKind, ns, 'p1')))).toBe(true);
    });

    it('lists across namespaces when no namespace is given', async () => {
      const other = await createTestNamespace('kube-client-other');
      await client.create<V1Pod>(PodKind, pod(other, 'x'));
      await client.create<V1Pod>(PodKind, pod(ns, 'x'));
      const all = await client.list<V1Pod>(PodKind, { labelSelector: 'app=kube-client-test' });
      const names = all.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
      expect(names).toEqual(expect.arrayContaining([`${other}/x`, `${ns}/x`]));
    });

    it('deletes a scheduled pod at once with grace period 0 and a matching UID precondition', async () => {
      const created = await client.create<V1Pod>(
        PodKind,
        pod(ns, 'scheduled', { nodeName: 'node-without-kubelet' }),
      );
      await client.delete(PodKind, ns, 'scheduled', {
        gracePeriodSeconds: 0,
        preconditions: { uid: created.metadata!.uid },
        propagationPolicy: 'Background',
      });
      expect(isNotFound(await caught(client.get(PodKind, ns, 'scheduled')))).toBe(true);
    });

    it('leaves a scheduled pod terminating when deleted with its default grace period', async () => {
      await client.create<V1Pod>(PodKind, pod(ns, 'graceful', { nodeName: 'node-without-kubelet' }));
      await client.delete(PodKind, ns, 'graceful');
      const terminating = await client.get<V1Pod>(PodKind, ns, 'graceful');
      expect(terminating.metadata?.deletionTimestamp).toBeTruthy();
      await client.delete(PodKind, ns, 'graceful', { gracePeriodSeconds: 0 });
    });

    it('refuses a delete whose UID precondition does not match, as a conflict', async () => {
      await client.create<V1Pod>(PodKind, pod(ns, 'guarded'));
      const err = await caught(
        client.delete(PodKind, ns, 'guarded', {
          preconditions: { uid: '00000000-0000-0000-0000-000000000000' },
        }),
      );
      expect(isConflict(err)).toBe(true);
      expect(statusMessage(err)).toMatch(/the UID in the precondition \(0{8}-.*\) does not match/);
      expect((await client.get<V1Pod>(PodKind, ns, 'guarded')).metadata?.deletionTimestamp).toBeUndefined();
    });
  });

  describe('typed errors', () => {
    it('not found: a get and a delete of a missing object, and ignoreNotFound swallows it', async () => {
      const err = await caught(client.get(SecretKind, ns, 'missing'));
      expect(err).toBeInstanceOf(KubeApiError);
      expect(isNotFound(err)).toBe(true);
      expect((err as KubeApiError).statusCode).toBe(404);
      expect((err as KubeApiError).message).toContain(
        `get Secret ${ns}/missing failed: secrets "missing" not found`,
      );
      expect(() => ignoreNotFound(err)).not.toThrow();
      expect(isNotFound(await caught(client.delete(SecretKind, ns, 'missing')))).toBe(true);
    });

    it('already exists: creating the same name twice', async () => {
      const secret: V1Secret = { metadata: { name: 'dup', namespace: ns }, stringData: { k: 'v' } };
      await client.create(SecretKind, secret);
      const err = await caught(client.create(SecretKind, secret));
      expect(isAlreadyExists(err)).toBe(true);
      expect(isConflict(err)).toBe(false);
    });

    it('conflict: a replace with a stale resourceVersion', async () => {
      const created = await client.create<V1Secret>(SecretKind, {
        metadata: { name: 'versioned', namespace: ns },
        stringData: { k: 'v1' },
      });
      await client.mergePatch(SecretKind, ns, 'versioned', { metadata: { labels: { bumped: 'yes' } } });
      const err = await caught(client.replace<V1Secret>(SecretKind, { ...created, data: { k: 'djI=' } }));
      expect(isConflict(err)).toBe(true);
      expect((err as KubeApiError).statusCode).toBe(409);
      expect(statusMessage(err)).toMatch(/the object has been modified/);
    });

    it('conflict: an optimistic-lock merge patch from a LazyCopy of a stale read', async () => {
      const stale = await client.create<V1Secret>(SecretKind, {
        metadata: { name: 'locked', namespace: ns },
      });
      await client.mergePatch(SecretKind, ns, 'locked', { metadata: { labels: { first: 'writer' } } });
      const copy = new LazyCopy(stale);
      copy.mutate().metadata!.labels = { second: 'writer' };
      const err = await caught(
        client.mergePatch(SecretKind, ns, 'locked', copy.mergePatch({ optimisticLock: true })!),
      );
      expect(isConflict(err)).toBe(true);
    });

    it('invalid: a pod without containers and an object with an illegal name', async () => {
      const noContainers = await caught(
        client.create<V1Pod>(PodKind, {
          metadata: { name: 'empty', namespace: ns },
          spec: { containers: [] },
        }),
      );
      expect(isInvalid(noContainers)).toBe(true);
      expect((noContainers as KubeApiError).statusCode).toBe(422);
      const badName = await caught(
        client.create<V1Lease>(LeaseKind, { metadata: { name: 'Not_Valid', namespace: ns } }),
      );
      expect(isInvalid(badName)).toBe(true);
      expect(statusMessage(badName)).toContain('Not_Valid');
    });

    it('forbidden: a user without RBAC, then allowed once a role is bound', async () => {
      const user = `kube-client-test-${ns}`;
      const nobody = new KubeClient(await kubeConfigForUser(user));
      try {
        const err = await caught(nobody.list(SecretKind, { namespace: ns }));
        expect(isForbidden(err)).toBe(true);
        expect(statusMessage(err)).toContain(`User "${user}" cannot list resource "secrets"`);

        await client.create(RoleKind, {
          metadata: { name: 'read-secrets', namespace: ns },
          rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
        });
        await client.create(RoleBindingKind, {
          metadata: { name: 'read-secrets', namespace: ns },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-secrets' },
          subjects: [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }],
        });
        const deadline = Date.now() + 30_000;
        for (;;) {
          try {
            await nobody.list(SecretKind, { namespace: ns });
            break;
          } catch (e) {
            // RBAC changes reach the authorizer through its own informer, a moment later.
            if (!isForbidden(e) || Date.now() > deadline) throw e;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      } finally {
        nobody.close();
      }
    });

    it('statusMessage carries the quota message the reconciler looks for', async () => {
      await client.create<V1ResourceQuota>(ResourceQuotaKind, {
        metadata: { name: 'no-pods', namespace: ns },
        spec: { hard: { pods: '0' } },
      });
      // No quota controller runs here, so the test fills in the status that admission reads.
      await client.mergePatchStatus(ResourceQuotaKind, ns, 'no-pods', {
        status: { hard: { pods: '0' }, used: { pods: '0' } },
      });
      // Admission reads quotas from its own informer: until that has seen the status patch, the quota
      // has no `status.hard` and admits everything. Retry (removing what got in) until it refuses.
      let err: unknown;
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await client.create<V1Pod>(PodKind, pod(ns, 'over-quota'));
        } catch (e) {
          err = e;
          break;
        }
        await client.delete(PodKind, ns, 'over-quota', { gracePeriodSeconds: 0 });
        if (Date.now() > deadline) throw new Error('the quota never refused a pod');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(isForbidden(err)).toBe(true);
      expect(statusMessage(err)).toContain('exceeded quota:');
      await client.delete(ResourceQuotaKind, ns, 'no-pods');
    });
  });

  describe('secrets and leases', () => {
    it('round-trips a secret with data, a patch that removes a key, and a delete', async () => {
      await client.create<V1Secret>(SecretKind, {
        metadata: { name: 'jit', namespace: ns, labels: { runner: 'r1' } },
        data: { jitToken: Buffer.from('token').toString('base64'), other: 'eA==' },
      });
      const patched = await client.mergePatch<V1Secret>(SecretKind, ns, 'jit', { data: { other: null } });
      expect(Object.keys(patched.data ?? {})).toEqual(['jitToken']);
      expect(
        (await client.list<V1Secret>(SecretKind, { namespace: ns, labelSelector: 'runner=r1' })).length,
      ).toBe(1);
      await client.delete(SecretKind, ns, 'jit');
      expect(isNotFound(await caught(client.get(SecretKind, ns, 'jit')))).toBe(true);
    });

    it('updates a lease under optimistic concurrency: the second writer from the same read loses', async () => {
      const lease = await client.create<V1Lease>(LeaseKind, {
        metadata: { name: 'leader', namespace: ns },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15 },
      });
      const first = await client.replace<V1Lease>(LeaseKind, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: 'b' },
      });
      expect(first.spec?.holderIdentity).toBe('b');
      expect(
        isConflict(await caught(client.replace(LeaseKind, { ...lease, spec: { holderIdentity: 'c' } }))),
      ).toBe(true);
      expect((await client.get<V1Lease>(LeaseKind, ns, 'leader')).spec?.holderIdentity).toBe('b');
      const [listed] = await client.list<V1Lease>(LeaseKind, { namespace: ns });
      expect(listed.kind).toBe('Lease');
      expect(listed.apiVersion).toBe('coordination.k8s.io/v1');
    });
  });

  describe('EphemeralRunner (custom resource)', () => {
    it('creates, patches finalizers away with a LazyCopy patch, patches status, replaces and deletes', async () => {
      const created = await client.create<EphemeralRunner>(EphemeralRunnerKind, runner(ns, 'r1'));
      expect(created.metadata?.finalizers).toEqual(['ephemeralrunner.actions.github.com/finalizer']);

      const statusPatched = await client.mergePatchStatus<EphemeralRunner>(EphemeralRunnerKind, ns, 'r1', {
        status: { phase: 'Running', runnerId: 12, failures: { 'uid-1': '2026-01-01T00:00:00Z' } },
      });
      expect(statusPatched.status).toEqual({
        phase: 'Running',
        runnerId: 12,
        failures: { 'uid-1': '2026-01-01T00:00:00Z' },
      });

      // A merge patch of the main resource leaves status alone: the CRD has a status subresource.
      const ignored = await client.mergePatch<EphemeralRunner>(EphemeralRunnerKind, ns, 'r1', {
        status: { phase: 'Failed' },
      });
      expect(ignored.status?.phase).toBe('Running');

      const listed = await client.list<EphemeralRunner>(EphemeralRunnerKind, { namespace: ns });
      expect(listed.map((r) => r.metadata?.name)).toEqual(['r1']);

      const replaced = await client.replace<EphemeralRunner>(EphemeralRunnerKind, {
        ...statusPatched,
        spec: { ...statusPatched.spec, runnerScaleSetId: 8 },
      });
      expect(replaced.spec.runnerScaleSetId).toBe(8);

      await client.delete(EphemeralRunnerKind, ns, 'r1');
      const terminating = await client.get<EphemeralRunner>(EphemeralRunnerKind, ns, 'r1');
      expect(terminating.metadata?.deletionTimestamp).toBeTruthy();

      const copy = new LazyCopy(terminating);
      copy.mutate().metadata!.finalizers = [];
      await client.mergePatch(EphemeralRunnerKind, ns, 'r1', copy.mergePatch()!);
      expect(isNotFound(await caught(client.get(EphemeralRunnerKind, ns, 'r1')))).toBe(true);
    });

    it('rejects a runner missing a required field as invalid', async () => {
      const bad = runner(ns, 'bad') as unknown as { spec: Record<string, unknown> };
      delete bad.spec.githubConfigUrl;
      const err = await caught(client.create(EphemeralRunnerKind, bad as unknown as EphemeralRunner));
      expect(isInvalid(err)).toBe(true);
      expect(statusMessage(err)).toContain('githubConfigUrl');
    });
  });

  describe('watch', () => {
    it('streams added, modified and deleted events from a resourceVersion, and ends at timeoutSeconds', async () => {
      const { resourceVersion } = await client.listWithVersion(SecretKind, { namespace: ns });
      const events: WatchEvent<V1Secret>[] = [];
      const ac = new AbortController();
      const ended = client.watch<V1Secret>(
        SecretKind,
        { namespace: ns, resourceVersion, timeoutSeconds: 3, fieldSelector: 'metadata.name=watched' },
        (e) => events.push(e),
        ac.signal,
      );
      await client.create(SecretKind, { metadata: { name: 'watched', namespace: ns } });
      await client.mergePatch(SecretKind, ns, 'watched', { metadata: { labels: { a: 'b' } } });
      await client.delete(SecretKind, ns, 'watched');
      await ended;
      expect(events.map((e) => `${e.type} ${e.object.metadata?.name}`)).toEqual([
        'ADDED watched',
        'MODIFIED watched',
        'DELETED watched',
      ]);
    });

    it('keeps a quiet watch open past the request timeout, which bounds only the wait for the response head', async () => {
      const quick = new KubeClient(testKubeConfig(), { requestTimeoutMs: 1_000 });
      try {
        const { resourceVersion } = await quick.listWithVersion(SecretKind, { namespace: ns });
        // Resolving (not a KubeTransportError) means the server ended it at timeoutSeconds, 3 s, long after
        // the 1 s request timeout would have cut it.
        await quick.watch(
          SecretKind,
          { namespace: ns, resourceVersion, timeoutSeconds: 3, fieldSelector: 'metadata.name=nothing' },
          () => undefined,
          AbortSignal.timeout(30_000),
        );
      } finally {
        quick.close();
      }
    });

    it('resolves when its signal aborts', async () => {
      const { resourceVersion } = await client.listWithVersion(SecretKind, { namespace: ns });
      const ac = new AbortController();
      const watching = client.watch(
        SecretKind,
        { namespace: ns, resourceVersion },
        () => undefined,
        ac.signal,
      );
      ac.abort();
      await expect(watching).resolves.toBeUndefined();
    });

    it('rejects with a 410 Gone for a resourceVersion etcd has compacted away', async () => {
      // Core Events have no watch cache in the API server, so this watch is answered by etcd itself.
      await client.create(EventKind, {
        metadata: { name: 'e1', namespace: ns },
        involvedObject: { kind: 'Pod', name: 'p', namespace: ns },
        reason: 'Test',
        message: 'm',
      });
      await compactEtcd();
      const err = await caught(
        client.watch(
          EventKind,
          { namespace: ns, resourceVersion: '1' },
          () => undefined,
          AbortSignal.timeout(30_000),
        ),
      );
      expect(isGone(err)).toBe(true);
      expect((err as KubeApiError).statusCode).toBe(410);
      expect((err as KubeApiError).reason).toBe('Expired');
    });
  });

  describe('transport', () => {
    it('gives up on a server that never answers after the request timeout, naming the call', async () => {
      const sockets = new Set<import('node:net').Socket>();
      const silent = http.createServer(() => undefined);
      silent.on('connection', (s) => sockets.add(s));
      await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
      const kc = new KubeConfig();
      kc.loadFromClusterAndUser(
        {
          name: 'silent',
          server: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
        { name: 'u' },
      );
      const slow = new KubeClient(kc, { requestTimeoutMs: 300 });
      try {
        const err = await caught(slow.get(PodKind, 'ns', 'p'));
        expect(err).toBeInstanceOf(KubeTransportError);
        expect((err as Error).message).toBe('get Pod ns/p failed: no answer within 300 ms');
      } finally {
        slow.close();
        sockets.forEach((s) => s.destroy());
        await new Promise((r) => silent.close(r));
      }
    });

    it('reports a refused connection as a transport error', async () => {
      const kc = new KubeConfig();
      kc.loadFromClusterAndUser(
        { name: 'closed', server: 'http://127.0.0.1:1', skipTLSVerify: true },
        { name: 'u' },
      );
      const refused = new KubeClient(kc);
      const err = await caught(refused.list(PodKind, { namespace: 'ns' }));
      expect(err).toBeInstanceOf(KubeTransportError);
      expect((err as Error).message).toMatch(/list Pod in namespace ns failed: .*ECONNREFUSED/);
      refused.close();
    });
  });
});
