import {
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  type ResourceKind,
  fnv32aHex,
} from '@aro/api';
import { PodKind, RoleBindingKind, RoleKind, SecretKind, ServiceAccountKind } from '@aro/kube';
import { waitFor } from '../../harness';
import { upstreamListenerName } from '../migration/upstream-meta';
import {
  type PlayedListenerPod,
  playUpstreamListenerPod,
  writeUpstreamListener,
} from '../migration/upstream-listener';
import {
  GITHUB_SECRET,
  ScaleSetFixture,
  autoscalingRunnerSet,
  scaleSetSuite,
  serviceClient,
  uniqueName,
} from './fixture';

jest.setTimeout(180_000);

/*
 * One AutoscalingListener per scale set, whoever made it (docs/migrating.md, "The listener"). ARO
 * names its listener as upstream does (upstreamListenerName restates upstream's algorithm; it is not
 * ARO's function), so after a switch each controller finds the other's listener as its own. A
 * listener of the same set under any other name (an older ARO's `<set>-<hex>-listener`, or one another
 * controller made beside ARO's) is deleted, with everything it used, and not run beside ARO's.
 */
describe('A listener of the scale set under another name', () => {
  const suite = scaleSetSuite();
  const stops: Array<() => void> = [];
  afterEach(() => {
    for (const stop of stops.splice(0)) stop();
  });

  /** What an older ARO named the listener: the FNV-1a sum in hex instead of upstream's encoding. */
  const olderAroName = (f: ScaleSetFixture, set: string) =>
    `${set}-${fnv32aHex(`${f.namespace}@@${f.configUrl}`)}-listener`;

  const upstreamName = (f: ScaleSetFixture, set: string) =>
    upstreamListenerName(set, f.namespace, '', f.configUrl);

  /** The listeners in the controller namespace that scale this set, by their spec, whatever their name. */
  async function listenersOf(f: ScaleSetFixture, set: string): Promise<string[]> {
    return (await f.list<AutoscalingListener>(AutoscalingListenerKind, f.controllerNamespace))
      .filter(
        (l) =>
          l.spec.autoscalingRunnerSetName === set && l.spec.autoscalingRunnerSetNamespace === f.namespace,
      )
      .map((l) => l.metadata?.name ?? '')
      .sort();
  }

  /** True when the listeners are the expected ones; else a throw naming them (a timeout then says). */
  function seen(listeners: string[], expected: string[]): true {
    if (listeners.join(',') === expected.join(',')) return true;
    throw new Error(`listeners of the set: ${listeners.join(', ') || 'none'}`);
  }

  async function ready(f: ScaleSetFixture, set: string): Promise<AutoscalingRunnerSet> {
    return waitFor(
      async () => {
        const ars = await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, set);
        return ars?.status?.phase === 'Running' && ars.metadata?.annotations?.[Annotations.runnerScaleSetId]
          ? ars
          : undefined;
      },
      { description: `AutoscalingRunnerSet ${set} Running with a scale set`, timeoutMs: 60_000 },
    );
  }

  /**
   * Another controller's listener for the set, as upstream's controller writes one (the listener, its
   * ServiceAccount, Role, RoleBinding, config Secret, a running pod and the session its process opened),
   * under `name`; its pod and process are played (on deletion: the session closed, the pod gone).
   */
  async function writeForeignListener(
    f: ScaleSetFixture,
    ars: AutoscalingRunnerSet,
    name: string,
  ): Promise<PlayedListenerPod> {
    const set = ars.metadata?.name ?? '';
    const scaleSetId = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    const actions = serviceClient(suite.sim);
    const { sessionId } = await writeUpstreamListener(f.kube, actions, {
      namespace: f.namespace,
      controllerNamespace: f.controllerNamespace,
      arsName: set,
      ersName: set,
      configUrl: f.configUrl,
      scaleSetId,
      maxRunners: ars.spec.maxRunners ?? 5,
      chartSecret: GITHUB_SECRET,
      arsLabels: {},
      head: true,
      listenerName: name,
    });
    const played = playUpstreamListenerPod(f.kube, actions, {
      namespace: f.controllerNamespace,
      name,
      scaleSetId,
      sessionId,
    });
    stops.push(() => played.stop());
    return { stopped: played.stopped.finally(() => actions.close()), stop: () => played.stop() };
  }

  /** Nothing left of listener `name`: its pod, config Secret, ServiceAccount, Role and RoleBinding. */
  async function leftOf(f: ScaleSetFixture, name: string): Promise<string[]> {
    const present = async (kind: ResourceKind, objectName: string, namespace: string, what: string) =>
      (await f.read(kind, objectName, namespace)) ? [what] : [];
    const found = await Promise.all([
      present(PodKind, name, f.controllerNamespace, 'pod'),
      present(SecretKind, `${name}-config`, f.controllerNamespace, 'config Secret'),
      present(ServiceAccountKind, name, f.controllerNamespace, 'ServiceAccount'),
      present(RoleKind, name, f.namespace, 'Role'),
      present(RoleBindingKind, name, f.namespace, 'RoleBinding'),
    ]);
    return found.flat();
  }

  it('made beside ARO’s is deleted with everything it used; ARO’s, under upstream’s name, stays and is not recreated', async () => {
    const f = await suite.start();
    const set = uniqueName('ars');
    await f.kube.create(AutoscalingRunnerSetKind, autoscalingRunnerSet(f, set));
    const ars = await ready(f, set);
    const ours = await waitFor(
      () => f.read<AutoscalingListener>(AutoscalingListenerKind, upstreamName(f, set), f.controllerNamespace),
      { description: 'the listener under upstream’s name' },
    );

    // As a controller of the other system does after a switch: its own listener beside ARO's.
    const foreign = olderAroName(f, set);
    const played = await writeForeignListener(f, ars, foreign);

    await waitFor(async () => seen(await listenersOf(f, set), [upstreamName(f, set)]), {
      description: `only ${upstreamName(f, set)} left serving ${set}`,
    });
    await played.stopped;
    await waitFor(async () => (await leftOf(f, foreign)).length === 0, {
      description: `nothing left of ${foreign}`,
    });
    const after = await f.read<AutoscalingListener>(
      AutoscalingListenerKind,
      upstreamName(f, set),
      f.controllerNamespace,
    );
    expect(after?.metadata?.uid).toBe(ours.metadata?.uid);
    expect(after?.metadata?.deletionTimestamp).toBeUndefined();
    // The other listener's process closed its session on the way out; none was left open for it.
    const scaleSetId = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    expect(suite.sim.sessions().filter((s) => s.scaleSetId === scaleSetId)).toEqual([]);
  });

  it('present when the set is uninstalled is deleted by the uninstall, which completes within seconds', async () => {
    const first = await suite.start();
    const set = uniqueName('ars');
    await first.kube.create(AutoscalingRunnerSetKind, autoscalingRunnerSet(first, set));
    const ars = await ready(first, set);
    await waitFor(
      () => first.read(AutoscalingListenerKind, upstreamName(first, set), first.controllerNamespace),
      { description: 'the listener under upstream’s name' },
    );
    // With ARO down, another listener of the set appears (the other system's controller ran) and the
    // set is uninstalled; the ARO that comes back finds a deleting set with two listeners.
    await first.stop();
    const foreign = olderAroName(first, set);
    const played = await writeForeignListener(first, ars, foreign);
    await first.kube.delete(AutoscalingRunnerSetKind, first.namespace, set);

    const started = Date.now();
    const f = await suite.start({ namespacesOf: first });
    await waitFor(
      async () =>
        (await f.read(AutoscalingRunnerSetKind, set)) === undefined && seen(await listenersOf(f, set), []),
      // The uninstall's own work: two listeners' finalizers and the set's, at 200 ms polls.
      { description: `${set} and every listener of it gone`, timeoutMs: 15_000 },
    );
    const took = Date.now() - started;
    await played.stopped;
    expect(await leftOf(f, foreign)).toEqual([]);
    expect(await leftOf(f, upstreamName(f, set))).toEqual([]);
    const scaleSetId = Number(ars.metadata?.annotations?.[Annotations.runnerScaleSetId]);
    expect(suite.sim.scaleSet(scaleSetId)).toBeUndefined();
    expect(suite.sim.sessions().filter((s) => s.scaleSetId === scaleSetId)).toEqual([]);
    process.stderr.write(
      `uninstall with a foreign-named listener: ${took} ms after the controller started\n`,
    );
  });
});
