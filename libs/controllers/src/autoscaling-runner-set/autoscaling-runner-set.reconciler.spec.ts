import type { V1Role, V1RoleBinding, V1Secret } from '@kubernetes/client-node';
import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  CLEANUP_PROTECTION_FINALIZER,
} from '@aro/api';
import { ActionsError, type ActionsServiceClient } from '@aro/actions';
import { RoleBindingKind, RoleKind, SecretKind, ServiceAccountKind } from '@aro/kube';
import { FakeKubeClient, apiError } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { AutoscalingRunnerSetReconciler } from './autoscaling-runner-set.reconciler';

const NS = 'team-a';
const NAME = 'arc-runners';
const T0 = Date.UTC(2026, 0, 1);

/** The scale sets the service holds, by ID; deleting one it no longer has answers 404, as the service does. */
class FakeActions {
  readonly scaleSets = new Set<number>();
  async deleteRunnerScaleSet(id: number): Promise<void> {
    if (!this.scaleSets.delete(id)) {
      // What the client makes of the service's 404 (an exception type it has no kind for).
      throw new ActionsError({
        kind: 'NotFound',
        method: 'DELETE',
        url: `https://pipelines.example/_apis/runtime/runnerscalesets/${id}`,
        statusCode: 404,
        typeName: 'RunnerScaleSetNotFoundException',
        detail: 'not found',
      });
    }
  }
}

function setup() {
  const kube = new FakeKubeClient(() => T0);
  const actions = new FakeActions();
  const reconciler = new AutoscalingRunnerSetReconciler(
    {
      client: kube,
      cache: kube,
      resolver: {
        getActionsClient: async () => actions as unknown as ActionsServiceClient,
      } as unknown as SecretResolver,
      logger: silentLogger,
      now: () => T0,
    },
    { controllerNamespace: 'arc-system', listenerImage: 'listener' },
  );
  const reconcile = () =>
    reconciler.reconcile(
      { namespace: NS, name: NAME },
      { signal: new AbortController().signal, log: silentLogger },
    );
  return { kube, actions, reconcile };
}

describe('AutoscalingRunnerSetReconciler deletion', () => {
  const deletingSet = (scaleSetId: number): AutoscalingRunnerSet =>
    ({
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: {
        namespace: NS,
        name: NAME,
        finalizers: [AUTOSCALING_RUNNER_SET_FINALIZER],
        annotations: { [Annotations.runnerScaleSetId]: String(scaleSetId) },
      },
      spec: {
        githubConfigUrl: 'https://github.com/octo',
        githubConfigSecret: 'gh',
        template: { spec: { containers: [{ name: 'runner', image: 'runner' }] } },
      },
    }) as AutoscalingRunnerSet;

  it('completes when the service already removed the scale set (404), so helm uninstall does not hang', async () => {
    const s = setup();
    s.kube.seed(AutoscalingRunnerSetKind, deletingSet(5));
    await s.kube.delete(AutoscalingRunnerSetKind, NS, NAME);

    await s.reconcile();

    expect(s.kube.peek(AutoscalingRunnerSetKind, NS, NAME)).toBeUndefined();
  });

  it('deletes a scale set the service still has, then completes', async () => {
    const s = setup();
    s.actions.scaleSets.add(6);
    s.kube.seed(AutoscalingRunnerSetKind, deletingSet(6));
    await s.kube.delete(AutoscalingRunnerSetKind, NS, NAME);

    await s.reconcile();

    expect(s.actions.scaleSets.has(6)).toBe(false);
    expect(s.kube.peek(AutoscalingRunnerSetKind, NS, NAME)).toBeUndefined();
  });
});

describe('AutoscalingRunnerSetReconciler deletion under the chart RBAC (helm uninstall)', () => {
  const MANAGER = 'arc-runners-gha-rs-manager';
  const SECRET = 'arc-runners-gha-rs-github-secret';
  const protect = { namespace: NS, finalizers: [CLEANUP_PROTECTION_FINALIZER] };

  /** A set whose scale set is already deleted (an earlier pass of the uninstall), naming the chart's objects. */
  const chartSet = (): AutoscalingRunnerSet =>
    ({
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: {
        namespace: NS,
        name: NAME,
        finalizers: [AUTOSCALING_RUNNER_SET_FINALIZER],
        annotations: {
          [Annotations.cleanupManagerRoleName]: MANAGER,
          [Annotations.cleanupManagerRoleBinding]: MANAGER,
          [Annotations.cleanupGitHubSecretName]: SECRET,
          [Annotations.cleanupNoPermissionServiceAccountName]: 'arc-runners-gha-rs-no-permission',
        },
      },
      spec: {
        githubConfigUrl: 'https://github.com/octo',
        githubConfigSecret: SECRET,
        template: { spec: { containers: [{ name: 'runner', image: 'runner' }] } },
      },
    }) as AutoscalingRunnerSet;

  /**
   * The controller's rights on secrets and service accounts in the set's namespace come from the
   * manager RoleBinding, as the chart grants them: while `granted()` says no, every such call is
   * refused with 403, whether the object exists or not (the apiserver authorizes before it looks).
   */
  function refuseUnless(s: ReturnType<typeof setup>, granted: () => boolean) {
    s.kube.fault((call) =>
      call.namespace === NS && [SecretKind, ServiceAccountKind].includes(call.kind) && !granted()
        ? apiError(403, 'Forbidden', `${call.kind.plural} "${call.name}" is forbidden`, call)
        : undefined,
    );
  }

  it('finishes a deletion resumed after the manager RoleBinding was released: what it can no longer read counts as released, the manager Role goes, and the set', async () => {
    const s = setup();
    // helm uninstall deleted everything; the pass before released the GitHub secret and service
    // account (gone) and the manager RoleBinding (gone, and with it the rights), then was cut short
    // before it released the manager Role.
    s.kube.seed<V1Role>(RoleKind, { metadata: { name: MANAGER, ...protect }, rules: [] });
    await s.kube.delete(RoleKind, NS, MANAGER);
    s.kube.seed(AutoscalingRunnerSetKind, chartSet());
    await s.kube.delete(AutoscalingRunnerSetKind, NS, NAME);
    refuseUnless(s, () => s.kube.peek(RoleBindingKind, NS, MANAGER) !== undefined);

    await s.reconcile();

    expect(s.kube.peek(RoleKind, NS, MANAGER)).toBeUndefined();
    expect(s.kube.peek(AutoscalingRunnerSetKind, NS, NAME)).toBeUndefined();
  });

  it('keeps the set and the manager objects protected when a chart object is refused while the manager RoleBinding is still there', async () => {
    const s = setup();
    s.kube.seed<V1Role>(RoleKind, { metadata: { name: MANAGER, ...protect }, rules: [] });
    s.kube.seed<V1RoleBinding>(RoleBindingKind, {
      metadata: { name: MANAGER, ...protect },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: MANAGER },
    });
    s.kube.seed<V1Secret>(SecretKind, { metadata: { name: SECRET, ...protect } });
    s.kube.seed(AutoscalingRunnerSetKind, chartSet());
    await s.kube.delete(AutoscalingRunnerSetKind, NS, NAME);
    // Refused for another reason than the binding's release (a Role someone edited): a failure to
    // retry, not "done"; the manager's rights stay until the rest is released.
    refuseUnless(s, () => false);

    await s.reconcile().catch(() => undefined);

    expect(s.kube.peek(AutoscalingRunnerSetKind, NS, NAME)?.metadata?.finalizers).toEqual([
      AUTOSCALING_RUNNER_SET_FINALIZER,
    ]);
    expect(s.kube.peek(RoleBindingKind, NS, MANAGER)?.metadata?.finalizers).toEqual([
      CLEANUP_PROTECTION_FINALIZER,
    ]);
    expect(s.kube.peek(RoleKind, NS, MANAGER)?.metadata?.finalizers).toEqual([CLEANUP_PROTECTION_FINALIZER]);
  });
});
