import type { CoreV1Event } from '@kubernetes/client-node';
import {
  AutoscalingListener,
  AutoscalingListenerKind,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  Labels,
  ScaleSetConditionTypes,
} from '@aro/api';
import { EventKind } from '@aro/kube';
import { waitFor } from '../../harness';
import { ScaleSetFixture, autoscalingRunnerSet, scaleSetSuite, uniqueName } from './fixture';

jest.setTimeout(180_000);

/**
 * The order of `helm upgrade`s upstream's users get wrong (upstream #4227): upstream's controller skips
 * (or deletes) an AutoscalingRunnerSet whose `app.kubernetes.io/version` is not its own, so a scale-set
 * chart upgraded ahead of its controller never gets a listener, silently. ARO's controller reads no
 * version from the set: a set stamped by a newer chart than the controller's, or by an older one, is
 * served as any other (the listener, the runner set, Ready), with no Warning. docs/helm.md, "Upgrade".
 */
describe('A scale set of another chart version than its controller', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  const cases: [string, Record<string, string>][] = [
    [
      'upgraded ahead of the controller (a newer chart)',
      { [Labels.version]: '0.15.0', 'helm.sh/chart': 'aro-scale-set-9.0.0' },
    ],
    [
      'left behind by a controller upgrade (an older chart)',
      { [Labels.version]: '0.12.1', 'helm.sh/chart': 'aro-scale-set-0.0.1' },
    ],
  ];

  it.each(cases)('is served when %s', async (_, labels) => {
    f = await suite.start();
    const name = uniqueName('skew');
    const set = autoscalingRunnerSet(f, name);
    set.metadata = { ...set.metadata, labels };
    await f.kube.create(AutoscalingRunnerSetKind, set);

    const listener = await waitFor(
      async () =>
        (await f.list<AutoscalingListener>(AutoscalingListenerKind, f.controllerNamespace)).find(
          (l) => l.spec?.autoscalingRunnerSetName === name,
        ),
      { description: `the listener of ${name}` },
    );
    expect(listener.spec?.autoscalingRunnerSetNamespace).toBe(f.namespace);
    expect(await f.read<EphemeralRunnerSet>(EphemeralRunnerSetKind, name)).toBeDefined();
    const ready = await waitFor(
      async () =>
        (await f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name))?.status?.conditions?.find(
          (c) => c.type === ScaleSetConditionTypes.scaleSetReady && c.status === 'True',
        ),
      { description: `${name} Ready` },
    );
    expect(ready.status).toBe('True');
    const warnings = (await f.list<CoreV1Event>(EventKind, f.namespace)).filter(
      (e) => e.involvedObject?.name === name && e.type === 'Warning',
    );
    expect(warnings.map((e) => `${e.reason}: ${e.message}`)).toEqual([]);
  });
});
