import {
  API_VERSION,
  AUTOSCALING_LISTENER_FINALIZER,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
} from '@aro/api';
import { FakeKubeClient } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { ListenerSync } from './listener-sync';
import { scaleSetContext } from './runner-scale-set-context';
import { ScaleSetStatusWriter } from './scale-set-status';

const NS = 'team-a';
const NAME = 'arc-runners';
const CONTROLLER_NS = 'arc-systems';
const T0 = Date.UTC(2026, 0, 1);
// Upstream's name for this set: printed by upstream's scaleSetListenerName (resourcebuilder.go, the
// same at the gha-runner-scale-set-0.14.2 tag and on main) run as Go, see scale-set.spec.ts.
const UPSTREAM_NAME = 'arc-runners-654545bd-listener';
// What ARO named it before it took upstream's algorithm: FNV-1a of the same string in hex.
const OLDER_ARO_NAME = 'arc-runners-7d3af8e5-listener';

const scaleSet: AutoscalingRunnerSet = {
  apiVersion: API_VERSION,
  kind: 'AutoscalingRunnerSet',
  metadata: { namespace: NS, name: NAME, uid: 'ars-uid' },
  spec: {
    githubConfigUrl: 'https://github.com/octo',
    githubConfigSecret: 'gh',
    template: { spec: { containers: [{ name: 'runner', image: 'runner' }] } },
  },
};

/** A listener another controller made for a set (`namespace/name`), held by its finalizer. */
function listenerOf(name: string, set: { namespace: string; name: string }): AutoscalingListener {
  return {
    apiVersion: API_VERSION,
    kind: 'AutoscalingListener',
    metadata: { namespace: CONTROLLER_NS, name, finalizers: [AUTOSCALING_LISTENER_FINALIZER] },
    spec: {
      githubConfigUrl: 'https://github.com/octo',
      githubConfigSecret: 'gh',
      runnerScaleSetId: 7,
      autoscalingRunnerSetNamespace: set.namespace,
      autoscalingRunnerSetName: set.name,
      ephemeralRunnerSetName: set.name,
      minRunners: 0,
      maxRunners: 5,
      image: 'other',
    },
  } as AutoscalingListener;
}

function setup() {
  const kube = new FakeKubeClient(() => T0);
  const ctx = scaleSetContext(
    {
      client: kube,
      cache: kube,
      resolver: {} as SecretResolver,
      logger: silentLogger,
      now: () => T0,
    },
    { controllerNamespace: CONTROLLER_NS, listenerImage: 'listener' },
  );
  const sync = new ListenerSync(ctx, new ScaleSetStatusWriter(ctx));
  const names = async () =>
    (await kube.list<AutoscalingListener>(AutoscalingListenerKind, { namespace: CONTROLLER_NS }))
      .map((l) => `${l.metadata?.name}${l.metadata?.deletionTimestamp ? ' (deleting)' : ''}`)
      .sort();
  /** The listener controller's finalizer done: the object goes. */
  const release = (name: string) =>
    kube.mergePatch(AutoscalingListenerKind, CONTROLLER_NS, name, { metadata: { finalizers: null } });
  return { kube, sync, names, release };
}

describe('ListenerSync: one listener per scale set, under upstream’s name', () => {
  it('creates the listener under the name upstream gives it', async () => {
    const s = setup();
    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    expect(await s.names()).toEqual([UPSTREAM_NAME]);
  });

  it('deletes a listener of the set under another name, and starts its own only once that one is gone', async () => {
    const s = setup();
    s.kube.seed(AutoscalingListenerKind, listenerOf(OLDER_ARO_NAME, { namespace: NS, name: NAME }));
    // Another set's listeners stay: the same set name in another namespace, another set here.
    s.kube.seed(
      AutoscalingListenerKind,
      listenerOf('arc-runners-xyz-listener', { namespace: 'b', name: NAME }),
    );
    s.kube.seed(AutoscalingListenerKind, listenerOf('other-xyz-listener', { namespace: NS, name: 'other' }));

    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    expect(await s.names()).toEqual([
      `${OLDER_ARO_NAME} (deleting)`,
      'arc-runners-xyz-listener',
      'other-xyz-listener',
    ]);

    await s.release(OLDER_ARO_NAME);
    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    expect(await s.names()).toEqual([UPSTREAM_NAME, 'arc-runners-xyz-listener', 'other-xyz-listener']);
  });

  it('keeps its own listener when another one of the set appears beside it, and deletes that one', async () => {
    const s = setup();
    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    const ours = s.kube.peek<AutoscalingListener>(AutoscalingListenerKind, CONTROLLER_NS, UPSTREAM_NAME);
    s.kube.seed(AutoscalingListenerKind, listenerOf(OLDER_ARO_NAME, { namespace: NS, name: NAME }));

    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    expect(await s.names()).toEqual([UPSTREAM_NAME, `${OLDER_ARO_NAME} (deleting)`]);
    expect(
      s.kube.peek<AutoscalingListener>(AutoscalingListenerKind, CONTROLLER_NS, UPSTREAM_NAME)?.metadata?.uid,
    ).toBe(ours?.metadata?.uid);
  });

  it('on the set’s deletion, deletes every listener of the set and says which are still going', async () => {
    const s = setup();
    await s.sync.reconcile(scaleSet, 7, NAME, silentLogger);
    s.kube.seed(AutoscalingListenerKind, listenerOf(OLDER_ARO_NAME, { namespace: NS, name: NAME }));

    const going = await s.sync.delete(scaleSet, silentLogger, { live: true });
    expect(going.map((l) => l.metadata?.name).sort()).toEqual([UPSTREAM_NAME, OLDER_ARO_NAME]);
    // Ours has no finalizer here (no listener controller ran): it is gone; the other one is held.
    expect(await s.names()).toEqual([`${OLDER_ARO_NAME} (deleting)`]);

    await s.release(OLDER_ARO_NAME);
    expect(await s.sync.delete(scaleSet, silentLogger, { live: true })).toEqual([]);
    expect(await s.names()).toEqual([]);
  });
});
