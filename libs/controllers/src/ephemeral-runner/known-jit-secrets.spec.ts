import { ObjectMemory } from '@aro/kube';
import type { EphemeralRunner } from '@aro/api';
import { KnownJitSecrets } from './known-jit-secrets';

const runner = (uid: string): EphemeralRunner =>
  ({ metadata: { namespace: 'ns', name: 'r', uid } }) as EphemeralRunner;

describe('KnownJitSecrets', () => {
  it('answers for the runner it was told about, not for another runner created under the same name', () => {
    const known = new KnownJitSecrets();
    known.remember(runner('uid-1'), { runnerId: 7, runnerName: 'r' });
    expect(known.identity(runner('uid-1'))).toEqual({ runnerId: 7, runnerName: 'r' });
    expect(known.identity(runner('uid-2'))).toBeUndefined();
    known.markSecretDeleted(runner('uid-1'));
    expect(known.secretDeleted(runner('uid-1'))).toBe(true);
    expect(known.secretDeleted(runner('uid-2'))).toBe(false);
  });

  it('forgets the registration once the status carries it, and everything once the runner is gone', () => {
    const memory = new ObjectMemory();
    const known = new KnownJitSecrets(memory);
    known.remember(runner('uid-1'), { runnerId: 7, runnerName: 'r' });
    known.published(runner('uid-1'));
    expect(known.identity(runner('uid-1'))).toBeUndefined();
    known.markSecretDeleted(runner('uid-1'));
    expect(memory.size).toBe(1);
    memory.forget('ns/r');
    expect(memory.size).toBe(0);
    expect(known.secretDeleted(runner('uid-1'))).toBe(false);
  });

  it('knows nothing of a deleted secret once the runner registers again (a new secret is created)', () => {
    const known = new KnownJitSecrets();
    known.markSecretDeleted(runner('uid-1'));
    known.remember(runner('uid-1'), { runnerId: 8, runnerName: 'r' });
    expect(known.secretDeleted(runner('uid-1'))).toBe(false);
  });
});
