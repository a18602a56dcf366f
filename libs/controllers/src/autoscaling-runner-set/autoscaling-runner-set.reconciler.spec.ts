import {
  AUTOSCALING_RUNNER_SET_FINALIZER,
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
} from '@aro/api';
import { ActionsError, type ActionsServiceClient } from '@aro/actions';
import { FakeKubeClient } from '@aro/kube/testing';
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
