import type { AutoscalingListener, EphemeralRunner, EphemeralRunnerSet } from '@aro/api';
import { configHolderOf, configHolderOfListener, configHolderOfRunnerSet } from './config-holder';

const github = {
  githubConfigUrl: 'https://github.com/org',
  githubConfigSecret: 'gh',
  proxy: { https: { url: 'http://p:1' } },
  githubServerTLS: { certificateFrom: { configMapKeyRef: { name: 'ca', key: 'ca.crt' } } },
  vaultConfig: { type: 'x' },
};

describe('config holders', () => {
  it('takes an EphemeralRunner’s namespace and GitHub settings', () => {
    const er = { metadata: { namespace: 'runners', name: 'r-1' }, spec: { ...github, runnerScaleSetId: 1 } };
    expect(configHolderOf(er as EphemeralRunner)).toEqual({
      namespace: 'runners',
      ...github,
      name: 'EphemeralRunner r-1',
    });
  });

  it('takes an EphemeralRunnerSet’s settings from its runner spec', () => {
    const ers = {
      metadata: { namespace: 'runners', name: 's' },
      spec: { patchID: 0, ephemeralRunnerSpec: github },
    };
    expect(configHolderOfRunnerSet(ers as unknown as EphemeralRunnerSet)).toMatchObject({
      namespace: 'runners',
      githubConfigSecret: 'gh',
      name: 'EphemeralRunnerSet s',
    });
  });

  it('resolves a listener in its scale set’s namespace, not the controller’s', () => {
    const listener = {
      metadata: { namespace: 'arc-systems', name: 'l' },
      spec: { ...github, autoscalingRunnerSetNamespace: 'runners' },
    };
    expect(configHolderOfListener(listener as AutoscalingListener).namespace).toBe('runners');
  });
});
