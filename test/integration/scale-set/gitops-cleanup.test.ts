import type { V1Role, V1RoleBinding, V1Secret, V1ServiceAccount } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  CLEANUP_PROTECTION_FINALIZER,
  Labels,
} from '@aro/api';
import { KubeObject, RoleBindingKind, RoleKind, SecretKind, ServiceAccountKind } from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import { scaled } from '../../harness/time-scale';
import { ScaleSetFixture, runnerPodTemplate, scaleSetSuite, uniqueName, waitForRunners } from './fixture';

jest.setTimeout(180_000);

/**
 * GitOps-safe cleanup (libs/controllers/src/autoscaling-runner-set/forgotten-protection.ts): a values
 * change switches the container mode and renames the GitHub secret, and the pruner (helm, Argo CD)
 * deletes what the chart no longer renders. Nothing stays Terminating; what the set names keeps its
 * protection.
 */
describe('AutoscalingRunnerSet chart objects dropped by a values change', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  it('releases the protection of objects the set no longer names once they are pruned, and keeps the rest', async () => {
    f = await suite.start({ runnerScaleSet: { scaleSetCheckIntervalMs: 1_000 } });
    const name = uniqueName('ars-gitops');
    const chartMeta = (object: string) => ({
      name: object,
      namespace: f.namespace,
      finalizers: [CLEANUP_PROTECTION_FINALIZER],
      labels: { [Labels.scaleSetName]: name, [Labels.scaleSetNamespace]: f.namespace },
    });
    // The chart's release in kubernetes mode, GitHub secret "old".
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: chartMeta(`${name}-old`),
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.kube.create<V1ServiceAccount>(ServiceAccountKind, { metadata: chartMeta(`${name}-kube-mode`) });
    await f.kube.create<V1Role>(RoleKind, {
      metadata: chartMeta(`${name}-kube-mode`),
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    });
    await f.kube.create<V1RoleBinding>(RoleBindingKind, {
      metadata: chartMeta(`${name}-kube-mode`),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-kube-mode` },
      subjects: [{ kind: 'ServiceAccount', name: `${name}-kube-mode`, namespace: f.namespace }],
    });
    const ars: AutoscalingRunnerSet = {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: {
        name,
        namespace: f.namespace,
        labels: { [Labels.scaleSetName]: name, [Labels.scaleSetNamespace]: f.namespace },
        annotations: {
          [Annotations.cleanupGitHubSecretName]: `${name}-old`,
          [Annotations.cleanupKubernetesModeServiceAccountName]: `${name}-kube-mode`,
          [Annotations.cleanupKubernetesModeRoleName]: `${name}-kube-mode`,
          [Annotations.cleanupKubernetesModeRoleBindingName]: `${name}-kube-mode`,
        },
      },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: `${name}-old`,
        maxRunners: 2,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    };
    await f.kube.create(AutoscalingRunnerSetKind, ars);
    await waitFor(
      async () =>
        (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.phase === 'Running',
      {
        description: 'the set Running',
        timeoutMs: 60_000,
      },
    );

    // helm upgrade: dind mode (no kube-mode objects), the secret renamed "new".
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: chartMeta(`${name}-new`),
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      metadata: {
        annotations: {
          [Annotations.cleanupGitHubSecretName]: `${name}-new`,
          [Annotations.cleanupKubernetesModeServiceAccountName]: null,
          [Annotations.cleanupKubernetesModeRoleName]: null,
          [Annotations.cleanupKubernetesModeRoleBindingName]: null,
        },
      },
      spec: { githubConfigSecret: `${name}-new` },
    });
    // ... and prunes what it no longer renders.
    const pruned: Array<[typeof SecretKind, string]> = [
      [SecretKind, `${name}-old`],
      [ServiceAccountKind, `${name}-kube-mode`],
      [RoleKind, `${name}-kube-mode`],
      [RoleBindingKind, `${name}-kube-mode`],
    ];
    const prunedAt = Date.now();
    for (const [kind, object] of pruned) await f.kube.delete(kind, f.namespace, object);
    for (const [kind, object] of pruned) {
      await waitFor(async () => (await f.read<KubeObject>(kind, object)) === undefined, {
        description: `${kind.kind} ${object} gone, not left Terminating`,
        timeoutMs: 30_000,
      });
    }
    console.log(`GitOps cleanup: 4 pruned chart objects gone ${Date.now() - prunedAt} ms after the prune`);
    // What the set names keeps its protection.
    expect((await f.read<V1Secret>(SecretKind, `${name}-new`))?.metadata?.finalizers).toEqual([
      CLEANUP_PROTECTION_FINALIZER,
    ]);
  });

  it('keeps the protection of the GitHub secret and Role the set still names when they are deleted, and the set keeps working', async () => {
    f = await suite.start({ runnerScaleSet: { scaleSetCheckIntervalMs: 1_000 } });
    const name = uniqueName('ars-named');
    const chartMeta = (object: string) => ({
      name: object,
      namespace: f.namespace,
      finalizers: [CLEANUP_PROTECTION_FINALIZER],
      labels: { [Labels.scaleSetName]: name, [Labels.scaleSetNamespace]: f.namespace },
    });
    const secret = `${name}-gh`;
    const role = `${name}-kube-mode`;
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: chartMeta(secret),
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.kube.create<V1Role>(RoleKind, {
      metadata: chartMeta(role),
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }],
    });
    // A chart object of an earlier release the set no longer names: its release, in the same sweep,
    // is the proof that the controller looked at the named ones while they were being deleted.
    const witness = `${name}-earlier`;
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: chartMeta(witness),
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.kube.create(AutoscalingRunnerSetKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: {
        name,
        namespace: f.namespace,
        labels: { [Labels.scaleSetName]: name, [Labels.scaleSetNamespace]: f.namespace },
        annotations: {
          [Annotations.cleanupGitHubSecretName]: secret,
          [Annotations.cleanupKubernetesModeRoleName]: role,
        },
      },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: secret,
        maxRunners: 2,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    } satisfies AutoscalingRunnerSet);
    await waitFor(
      async () =>
        (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.phase === 'Running',
      { description: 'the set Running', timeoutMs: 60_000 },
    );

    // Someone (kubectl delete, a pruner that lost track of the release) deletes what the set names,
    // then the object the set no longer names.
    await f.kube.delete(SecretKind, f.namespace, secret);
    await f.kube.delete(RoleKind, f.namespace, role);
    await f.kube.delete(SecretKind, f.namespace, witness);
    await waitFor(async () => (await f.read<V1Secret>(SecretKind, witness)) === undefined, {
      description: `the unnamed Secret ${witness} released and gone`,
      timeoutMs: 30_000,
    });
    // The sweep that released it listed the named two as being deleted, and kept them.
    for (const [kind, object] of [
      [SecretKind, secret],
      [RoleKind, role],
    ] as const) {
      const left = await f.read<KubeObject>(kind, object);
      expect(left?.metadata?.deletionTimestamp).toBeDefined();
      expect(left?.metadata?.finalizers).toEqual([CLEANUP_PROTECTION_FINALIZER]);
    }

    // The set still works on its (Terminating) secret: a runner it makes for a job registers.
    await f.scale(name, 1, 1);
    const [runner] = await waitForRunners(f, name, (r) => r.length === 1, 'a runner', scaled(60_000));
    await waitFor(
      () =>
        suite.sim.registrations().some((r) => r.name.toLowerCase() === runner.metadata!.name!.toLowerCase()),
      { description: `runner ${runner.metadata?.name} registered on the service`, timeoutMs: 60_000 },
    );
    expect((await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.phase).toBe(
      'Running',
    );
  });
});
