import type { ActionsServiceClient, RunnerReference } from '@aro/actions';
import { ActionsError } from '@aro/actions';
import type { EphemeralRunner } from '@aro/api';
import { silentLogger } from '@aro/observability';
import { FatalRegistrationError, RetryableRegistrationError, createJitConfig } from './runner-registration';

/** A scale set's registrations, as the service holds them, and a client over them. */
class Service {
  readonly registrations = new Map<string, RunnerReference>();
  private nextId = 1;

  client(opts: { vanishOnLookup?: boolean } = {}): ActionsServiceClient {
    return {
      generateJitRunnerConfig: async (setting: { name: string }, scaleSetId: number) => {
        if (this.registrations.has(setting.name)) {
          throw new ActionsError({
            kind: 'RunnerExists',
            statusCode: 409,
            method: 'POST',
            url: 'generatejitconfig',
            detail: 'exists',
          });
        }
        const runner = { id: this.nextId++, name: setting.name, runnerScaleSetId: scaleSetId };
        this.registrations.set(setting.name, runner);
        return { runner, encodedJITConfig: 'jit' };
      },
      getRunnerByName: async (name: string) => {
        if (opts.vanishOnLookup) this.registrations.delete(name);
        return this.registrations.get(name);
      },
      removeRunner: async (id: number) => {
        for (const [name, r] of this.registrations) if (r.id === id) this.registrations.delete(name);
      },
    } as unknown as ActionsServiceClient;
  }
}

const runner: EphemeralRunner = {
  metadata: { name: 'r1', namespace: 'ns' },
  spec: {
    githubConfigUrl: 'https://github.com/o',
    githubConfigSecret: 's',
    runnerScaleSetId: 5,
    spec: { containers: [{ name: 'runner', image: 'i', workingDir: '/work' }] },
  },
};

describe('createJitConfig', () => {
  it('registers the runner under its name', async () => {
    const service = new Service();
    const jit = await createJitConfig(runner, async () => service.client(), silentLogger);
    expect(jit.runner).toEqual({ id: 1, name: 'r1', runnerScaleSetId: 5 });
  });

  it('removes a stale registration of the same scale set and asks for a retry', async () => {
    const service = new Service();
    service.registrations.set('r1', { id: 9, name: 'r1', runnerScaleSetId: 5 });
    await expect(createJitConfig(runner, async () => service.client(), silentLogger)).rejects.toBeInstanceOf(
      RetryableRegistrationError,
    );
    expect(service.registrations.has('r1')).toBe(false);
  });

  it('asks for a retry when the conflicting registration vanished before it could be looked up', async () => {
    const service = new Service();
    service.registrations.set('r1', { id: 9, name: 'r1', runnerScaleSetId: 5 });
    await expect(
      createJitConfig(runner, async () => service.client({ vanishOnLookup: true }), silentLogger),
    ).rejects.toThrow(new RetryableRegistrationError('runner existed, retry configuration'));
  });

  it('refuses a name registered to another scale set, leaving that registration alone', async () => {
    const service = new Service();
    service.registrations.set('r1', { id: 9, name: 'r1', runnerScaleSetId: 6 });
    await expect(createJitConfig(runner, async () => service.client(), silentLogger)).rejects.toBeInstanceOf(
      FatalRegistrationError,
    );
    expect(service.registrations.get('r1')?.id).toBe(9);
  });
});
