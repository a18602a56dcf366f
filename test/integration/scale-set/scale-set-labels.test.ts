import type { CoreV1Event } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  ScaleSetConditionTypes,
  ScaleSetReasons,
} from '@aro/api';
import { EventKind } from '@aro/kube';
import { waitFor } from '../../harness';
import { ScaleSetFixture, autoscalingRunnerSet, scaleSetSuite, uniqueName } from './fixture';

jest.setTimeout(180_000);

/**
 * The scale set's labels on the Actions service follow the AutoscalingRunnerSet: a label added to a set
 * that exists, and the labels of a scale set adopted from an earlier install, reach the service
 * (upstream sends labels only at create: #4579); a service that drops them says so.
 */
describe('Scale set labels kept true', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  afterEach(() => suite.sim.setExtraScaleSetLabels('kept'));

  const labelsOnService = (id: number) => (suite.sim.scaleSet(id)?.labels ?? []).map((l) => l.name).sort();
  const readArs = (name: string) => f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
  async function scaleSetIdOf(name: string): Promise<number> {
    return waitFor(
      async () =>
        Number((await readArs(name))?.metadata?.annotations?.[Annotations.runnerScaleSetId] ?? 0) ||
        undefined,
      { description: `AutoscalingRunnerSet ${name} with a scale set` },
    );
  }
  const events = async (name: string, reason: string) =>
    (await f.list<CoreV1Event>(EventKind)).filter(
      (e) => e.involvedObject?.name === name && e.reason === reason,
    );
  const labelsCondition = async (name: string) =>
    (await readArs(name))?.status?.conditions?.find(
      (c) => c.type === ScaleSetConditionTypes.scaleSetLabelsCurrent,
    );

  it('adds a label given to an existing set to its scale set on the service', async () => {
    f = await suite.start();
    const name = uniqueName('labels');
    await f.kube.create(
      AutoscalingRunnerSetKind,
      autoscalingRunnerSet(f, name, 5, { runnerScaleSetLabels: ['linux'] }),
    );
    const id = await scaleSetIdOf(name);
    expect(labelsOnService(id)).toEqual(['linux', name].sort());

    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      spec: { runnerScaleSetLabels: ['linux', 'gpu'] },
    });
    await waitFor(() => labelsOnService(id).includes('gpu'), {
      description: 'the new label on the scale set on the service',
    });
    expect(labelsOnService(id)).toEqual(['gpu', 'linux', name].sort());
    // What was sent is on the set, so later passes compare the spec with it and ask the service nothing.
    await waitFor(
      async () =>
        (await readArs(name))?.metadata?.annotations?.[Annotations.runnerScaleSetLabels] ===
        ['gpu', 'linux', name].sort().join(','),
      { description: 'the labels sent recorded on the set' },
    );
  });

  it('gives an adopted scale set the labels of the set that adopts it', async () => {
    f = await suite.start();
    const name = uniqueName('adopted');
    // What an earlier install left on the service: the scale set of that name, with other labels.
    const earlier = suite.sim.createScaleSet({ org: 'octo' }, { name, labels: [name, 'old-label'] });
    await f.kube.create(
      AutoscalingRunnerSetKind,
      autoscalingRunnerSet(f, name, 5, { runnerScaleSetLabels: ['linux'] }),
    );
    expect(await scaleSetIdOf(name)).toBe(earlier.id);
    await waitFor(() => labelsOnService(earlier.id).join() === ['linux', name].sort().join(), {
      description: 'the adopted scale set carrying the set’s labels and no other',
    });
  });

  it('says so in a condition and a Warning Event when the service drops labels, and clears it once they hold', async () => {
    f = await suite.start();
    // GHES before 3.18: only the name is kept.
    suite.sim.setExtraScaleSetLabels('ignored');
    const name = uniqueName('refused');
    await f.kube.create(
      AutoscalingRunnerSetKind,
      autoscalingRunnerSet(f, name, 5, { runnerScaleSetLabels: ['linux'] }),
    );
    const id = await scaleSetIdOf(name);
    const refused = await waitFor(
      async () => {
        const c = await labelsCondition(name);
        return c?.status === 'False' ? c : undefined;
      },
      { description: 'ScaleSetLabelsCurrent=False' },
    );
    expect(refused.reason).toBe(ScaleSetReasons.scaleSetLabelsRefused);
    expect(refused.message).toContain('linux');
    expect(labelsOnService(id)).toEqual([name]);
    const warnings = await waitFor(
      async () => {
        const found = await events(name, ScaleSetReasons.scaleSetLabelsRefused);
        return found.length > 0 ? found : undefined;
      },
      { description: 'a ScaleSetLabelsRefused Warning Event' },
    );
    expect(warnings[0].type).toBe('Warning');
    expect(warnings[0].message).toContain('linux');

    // The service takes labels again (an upgraded GHES); the next change reaches it and the condition clears.
    suite.sim.setExtraScaleSetLabels('kept');
    await f.kube.mergePatch(AutoscalingRunnerSetKind, f.namespace, name, {
      spec: { runnerScaleSetLabels: ['linux', 'x64'] },
    });
    await waitFor(async () => (await labelsCondition(name))?.status === 'True', {
      description: 'ScaleSetLabelsCurrent=True',
    });
    expect(labelsOnService(id)).toEqual(['linux', name, 'x64'].sort());
  });
});
