import type {
  V1PolicyRule,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  CLEANUP_PROTECTION_FINALIZER,
} from '@aro/api';
import {
  KubeClient,
  type KubeObject,
  RoleBindingKind,
  RoleKind,
  SecretKind,
  ServiceAccountKind,
} from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { createTestNamespace, kubeConfigForUser, testKubeConfig, waitFor } from '../../harness';
import { scaled } from '../../harness/time-scale';
import { runnerPodTemplate, scaleSetSuite } from './fixture';

jest.setTimeout(scaled(180_000));

const NAME = 'arc-runners';
const MANAGER = 'arc-runners-gha-rs-manager';
const SECRET = 'arc-runners-gha-rs-github-secret';
const NO_PERMISSION = 'arc-runners-gha-rs-no-permission';

/** What the aro-controller chart grants in a watched namespace, without its release-protection rule. */
const WATCH_RULES: V1PolicyRule[] = [
  { apiGroups: ['actions.github.com'], resources: ['*'], verbs: ['*'] },
  { apiGroups: [''], resources: ['pods', 'serviceaccounts'], verbs: ['list', 'watch'] },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'rolebindings'],
    verbs: ['list', 'watch'],
  },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
];

/** The chart's `releaseProtection` rule: lifting the manager Role's finalizer once its binding is gone. */
const RELEASE_PROTECTION: V1PolicyRule = {
  apiGroups: ['rbac.authorization.k8s.io'],
  resources: ['roles', 'rolebindings'],
  verbs: ['get', 'patch'],
};

/**
 * The aro-scale-set chart's manager Role: the controller's rights on secrets and service accounts here.
 * One difference from the chart: no `patch` on roles. The controller releases the manager Role a few
 * milliseconds after its binding, and the apiserver's RBAC authorizer works from a cache that may still
 * hold the just-deleted binding; with `patch` on roles here, that lag let the Role's release through
 * once (the set then finished at once and the resumed deletion this test is about never happened).
 * Without it, the Role's release is refused whatever the cache holds, as it is once the cache catches up.
 */
const MANAGER_RULES: V1PolicyRule[] = [
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'delete', 'get', 'patch'] },
  { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['create'] },
  {
    apiGroups: [''],
    resources: ['secrets', 'serviceaccounts'],
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['rolebindings'],
    verbs: ['create', 'delete', 'get', 'patch', 'update'],
  },
  {
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles'],
    verbs: ['create', 'delete', 'get', 'update'],
  },
];

/**
 * `helm uninstall` of a scale set, with the controller holding only the charts' rights: in the set's
 * namespace, secrets and service accounts come from the manager RoleBinding alone. Once that binding is
 * released and gone, every read of the set's other chart objects is refused, whether they exist or
 * not. A deletion that resumes at that point (after a pass cut short, a restart) must take the refusal
 * for "released before" (the binding goes last but one) and finish, or the uninstall hangs for ever.
 */
describe('AutoscalingRunnerSet deletion under the charts’ RBAC', () => {
  const suite = scaleSetSuite();
  const kube = new KubeClient(testKubeConfig());
  afterAll(() => kube.close());

  it('finishes a deletion that resumes after the manager RoleBinding was released and meets Forbidden on the rest', async () => {
    const namespace = await createTestNamespace('ss-rbac');
    const controllerNamespace = await createTestNamespace('ctl-rbac');
    const user = `aro-uninstall-${process.pid}-${Date.now() % 100000}`;
    const subjects = [{ kind: 'User', name: user, apiGroup: 'rbac.authorization.k8s.io' }];
    const roleRef = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name });
    const protect = { namespace, finalizers: [CLEANUP_PROTECTION_FINALIZER] };
    // The scene is set as the admin (`kube`); the controller, started once its rights are there, runs as `user`.
    // The controller's namespace (listeners, their pods, secrets and the scale-set ledger): anything.
    await kube.create<V1Role>(RoleKind, {
      metadata: { name: 'controller', namespace: controllerNamespace },
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }],
    });
    await kube.create<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: 'controller', namespace: controllerNamespace },
      roleRef: roleRef('controller'),
      subjects,
    });
    // The watched namespace: the aro-controller chart's rules, for now without the release of the
    // manager Role (an older chart's), so that the uninstall stops right after the binding's release.
    await kube.create<V1Role>(RoleKind, {
      metadata: { name: 'controller-watch', namespace },
      rules: WATCH_RULES,
    });
    await kube.create<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: 'controller-watch', namespace },
      roleRef: roleRef('controller-watch'),
      subjects,
    });
    // The aro-scale-set chart's objects, each protected.
    await kube.create<V1Role>(RoleKind, { metadata: { name: MANAGER, ...protect }, rules: MANAGER_RULES });
    await kube.create<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: MANAGER, ...protect },
      roleRef: roleRef(MANAGER),
      subjects,
    });
    await kube.create<V1Secret>(SecretKind, {
      metadata: { name: SECRET, ...protect },
      stringData: { github_token: DEFAULT_PAT },
    });
    await kube.create<V1ServiceAccount>(ServiceAccountKind, {
      metadata: { name: NO_PERMISSION, ...protect },
    });
    const f = await suite.start({
      namespacesOf: { namespace, controllerNamespace },
      controllerKubeConfig: await kubeConfigForUser(user),
      runnerScaleSet: { errorBackoffMaxMs: 1_000 },
    });
    await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: {
        name: NAME,
        namespace,
        annotations: {
          [Annotations.cleanupManagerRoleName]: MANAGER,
          [Annotations.cleanupManagerRoleBinding]: MANAGER,
          [Annotations.cleanupGitHubSecretName]: SECRET,
          [Annotations.cleanupNoPermissionServiceAccountName]: NO_PERMISSION,
        },
      },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: SECRET,
        maxRunners: 2,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    });
    const running = await waitFor(
      async () => {
        const ars = await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, NAME);
        return ars?.status?.phase === 'Running' && ars.metadata?.annotations?.[Annotations.runnerScaleSetId]
          ? ars
          : undefined;
      },
      { description: 'the set Running with a scale set, on the charts’ rights', timeoutMs: 60_000 },
    );
    const scaleSetId = Number(running.metadata?.annotations?.[Annotations.runnerScaleSetId]);

    // helm uninstall: everything of the release deleted at once.
    await kube.delete(AutoscalingRunnerSetKind, namespace, NAME);
    for (const [kind, name] of [
      [RoleBindingKind, MANAGER],
      [RoleKind, MANAGER],
      [SecretKind, SECRET],
      [ServiceAccountKind, NO_PERMISSION],
    ] as const) {
      await kube.delete(kind, namespace, name);
    }
    // The deletion runs to the manager's objects: the scale set deleted, the secret and service account
    // released and gone, then the binding, and with it the controller's rights here. The Role's release
    // is refused (this chart lacks the rule), so the set stays, its deletion cut at that point.
    await waitFor(
      async () =>
        !suite.sim.scaleSets().some((s) => s.id === scaleSetId) &&
        (await f.read(SecretKind, SECRET)) === undefined &&
        (await f.read(ServiceAccountKind, NO_PERMISSION)) === undefined &&
        (await f.read(RoleBindingKind, MANAGER)) === undefined,
      { description: 'the deletion up to the manager RoleBinding’s release', timeoutMs: 60_000 },
    );
    expect((await f.read<KubeObject>(RoleKind, MANAGER))?.metadata?.finalizers).toEqual([
      CLEANUP_PROTECTION_FINALIZER,
    ]);
    expect(await f.read(AutoscalingRunnerSetKind, NAME)).toBeDefined();

    // The controller chart upgraded to one with the rule: the next pass resumes there, is refused every
    // read of the secret and service account, and must finish.
    await kube.mergePatch(RoleKind, namespace, 'controller-watch', {
      rules: [...WATCH_RULES, RELEASE_PROTECTION],
    });
    const resumedAt = Date.now();
    await waitFor(async () => (await f.read(AutoscalingRunnerSetKind, NAME)) === undefined, {
      description: 'the AutoscalingRunnerSet gone (helm uninstall returns)',
      // The fixture's error backoff is at most 1 s: a few passes, not a hang.
      timeoutMs: 20_000,
    });
    expect(await f.read(RoleKind, MANAGER)).toBeUndefined();
    console.log(`uninstall under RBAC: the set gone ${Date.now() - resumedAt} ms after the rule was granted`);
  });
});
