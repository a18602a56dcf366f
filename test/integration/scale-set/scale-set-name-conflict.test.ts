import type { CoreV1Event } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import { EventKind } from '@aro/kube';
import { waitFor } from '../../harness';
import { ScaleSetFixture, autoscalingRunnerSet, scaleSetSuite, uniqueName } from './fixture';

jest.setTimeout(180_000);

/*
 * The Actions service keeps one scale set per name in a runner group, and a set adopts the one of its
 * name that already exists (so a re-created set, or one moved from upstream ARC, carries on). Two sets
 * of one cluster resolving to the same name would share it: their listeners fight over its one message
 * session, and deleting either deletes the scale set under the other. ARO refuses the second set with
 * a reason instead.
 */
describe('Two AutoscalingRunnerSets resolving to one scale set', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  function newScaleSet(name: string, scaleSetName: string): AutoscalingRunnerSet {
    return autoscalingRunnerSet(f, name, 2, { runnerScaleSetName: scaleSetName });
  }

  const readArs = (name: string) => f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
  const scaleSetReady = async (name: string) =>
    (await readArs(name))?.status?.conditions?.find((c) => c.type === ScaleSetConditionTypes.scaleSetReady);

  it('refuses the second with ScaleSetNameConflict, never deletes the first one’s scale set, and recovers on a new name', async () => {
    f = await suite.start();
    const shared = uniqueName('shared');
    const first = uniqueName('first');
    const second = uniqueName('second');

    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(first, shared));
    const firstId = await waitFor(
      async () => (await readArs(first))?.metadata?.annotations?.[Annotations.runnerScaleSetId],
      { description: `${first} to record its scale set` },
    );

    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(second, shared));
    const refused = await waitFor(
      async () => {
        const c = await scaleSetReady(second);
        return c?.status === 'False' ? c : undefined;
      },
      { description: `${second} refused` },
    );
    expect(refused.reason).toBe(ScaleSetReasons.scaleSetNameConflict);
    expect(refused.message).toContain(`already used by AutoscalingRunnerSet ${f.namespace}/${first}`);
    // The Event is written by the recorder after the status, on its own: waited for, not read once (at
    // load 40 the one read came before it).
    const warning = await waitFor(
      async () =>
        (await f.list<CoreV1Event>(EventKind)).find(
          (e) =>
            e.involvedObject?.name === second &&
            e.type === 'Warning' &&
            e.reason === ScaleSetReasons.scaleSetNameConflict,
        ),
      { description: `a ${ScaleSetReasons.scaleSetNameConflict} Warning Event on ${second}` },
    );
    expect(warning.message).toContain(first);
    const refusedArs = await readArs(second);
    expect(refusedArs?.metadata?.annotations?.[Annotations.runnerScaleSetId]).toBeUndefined();
    // No listener was made for it: nothing fights the first set's listener for the session.
    const listeners = await f.list<AutoscalingListener>(AutoscalingListenerKind, f.controllerNamespace);
    expect(listeners.filter((l) => l.spec.autoscalingRunnerSetName === second)).toEqual([]);

    // Deleting the refused set leaves the first set's scale set on the service.
    await f.kube.delete(AutoscalingRunnerSetKind, f.namespace, second);
    await waitFor(async () => (await readArs(second)) === undefined, { description: `${second} gone` });
    expect(f.sim.scaleSets().find((s) => String(s.id) === firstId)).toMatchObject({ name: shared });

    // The way out the message names: another scale set name.
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(second, uniqueName('own')));
    const ownId = await waitFor(
      async () => (await readArs(second))?.metadata?.annotations?.[Annotations.runnerScaleSetId],
      { description: `${second} with a scale set of its own` },
    );
    expect(ownId).not.toBe(firstId);
    expect((await scaleSetReady(second))?.status).not.toBe('False');
  });
});
