import { ActionsError } from '@aro/actions';
import type { ActionsServiceClient, GitHubCredentials, MultiClient } from '@aro/actions';
import type { KubeClient } from '@aro/kube';
import type { GitHubConfigHolder } from './config-holder';
import type { CredentialSource } from './credential-source';
import { SecretResolutionError } from './errors';
import { KubernetesSecretSource } from './kubernetes-secret-source';
import { SecretResolver, isCredentialFailure } from './secret-resolver';

/** A KubeClient whose reads never answer: what an API server that stopped responding looks like. */
const silentKube = { get: () => new Promise<never>(() => undefined) } as unknown as KubeClient;
const noMultiClient = {} as MultiClient;
const holder: GitHubConfigHolder = {
  namespace: 'team-a',
  githubConfigUrl: 'https://github.com/org',
  githubConfigSecret: 'gh',
  name: 'EphemeralRunner r-1',
};

function staticSource(name: string, vaultType: string, credentials: GitHubCredentials): CredentialSource {
  return {
    name,
    handles: (h) => (h.vaultConfig?.type ?? '') === vaultType,
    getCredentials: async () => credentials,
  };
}

describe('SecretResolver', () => {
  it('gives up on a read that does not answer within its timeout', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient, timeoutMs: 20 });
    await expect(resolver.getCredentials(holder)).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('gives up when the caller aborts', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const controller = new AbortController();
    const pending = resolver.getCredentials(holder, controller.signal);
    controller.abort(new Error('reconcile cancelled'));
    await expect(pending).rejects.toThrow('reconcile cancelled');
  });

  it('asks the first source that handles the holder', async () => {
    const resolver = new SecretResolver({
      kube: silentKube,
      multiClient: noMultiClient,
      sources: [
        staticSource('vault-a', 'a', { kind: 'pat', token: 'from-a' }),
        staticSource('vault-b', 'b', { kind: 'pat', token: 'from-b' }),
        new KubernetesSecretSource(silentKube),
      ],
    });
    await expect(resolver.getCredentials({ ...holder, vaultConfig: { type: 'b' } })).resolves.toEqual({
      kind: 'pat',
      token: 'from-b',
    });
  });

  it('names the vault type and the sources when none handles the holder', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const result = resolver.getCredentials({ ...holder, vaultConfig: { type: 'hashicorp' } });
    await expect(result).rejects.toBeInstanceOf(SecretResolutionError);
    await expect(result).rejects.toThrow(
      'vault secret team-a/gh: no credential source handles vault type hashicorp (EphemeralRunner r-1); ' +
        'registered sources: kubernetes-secret',
    );
  });

  it('refuses a holder without a namespace before reading anything', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    await expect(resolver.getCredentials({ ...holder, namespace: '' })).rejects.toMatchObject({
      reason: 'InvalidHolder',
    });
  });

  it('refuses githubServerTLS without a ConfigMap reference', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient });
    const tls = { certificateFrom: { configMapKeyRef: { name: '', key: 'ca.crt' } } };
    await expect(resolver.getRootCAs({ ...holder, githubServerTLS: tls })).rejects.toMatchObject({
      reason: 'InvalidTLSConfig',
    });
  });
});

describe('SecretResolver and a refused credential', () => {
  /** A service refusing the token exchange of one PAT, recording every call it gets. */
  class RefusingService {
    calls = 0;
    constructor(
      readonly refusedToken: string,
      readonly status: number,
      readonly path = '/orgs/org/actions/runners/registration-token',
    ) {}

    multiClient(): MultiClient {
      return {
        getClientFor: (o: { credentials: GitHubCredentials }) =>
          ({
            generateJitRunnerConfig: async () => {
              this.calls++;
              if (o.credentials.kind === 'pat' && o.credentials.token === this.refusedToken) {
                throw new ActionsError({
                  kind: this.status === 404 ? 'NotFound' : 'Unauthorized',
                  statusCode: this.status,
                  method: 'POST',
                  url: `https://api.github.com${this.path}`,
                  detail: 'Bad credentials',
                });
              }
              return { runner: { id: 1, name: 'r', runnerScaleSetId: 1 }, encodedJITConfig: 'x' };
            },
          }) as unknown as ActionsServiceClient,
      } as unknown as MultiClient;
    }
  }

  function resolverWith(service: RefusingService, token: { value: string }, clock: { now: number }) {
    return new SecretResolver({
      kube: silentKube,
      multiClient: service.multiClient(),
      sources: [
        {
          name: 'static',
          handles: () => true,
          getCredentials: async () => ({ kind: 'pat', token: token.value }),
        },
      ],
      credentialFailureTtlMs: 60_000,
      now: () => clock.now,
    });
  }

  const register = async (resolver: SecretResolver, runner: string) =>
    (
      await resolver.getActionsClient({ ...holder, name: `EphemeralRunner ${runner}` })
    ).generateJitRunnerConfig({ name: runner, workFolder: '' }, 1);

  it.each([401, 403])(
    'asks the service once for many runners sharing a credential it refused with %i',
    async (status) => {
      const service = new RefusingService('wrong', status);
      const clock = { now: 1_000_000 };
      const resolver = resolverWith(service, { value: 'wrong' }, clock);
      const results = [];
      for (let i = 0; i < 20; i++) results.push(await register(resolver, `r-${i}`).catch((e: unknown) => e));
      expect(service.calls).toBe(1);
      expect(results.every((e) => isCredentialFailure(e))).toBe(true);
      expect(String(results[5])).toMatch(
        /credentials in team-a\/gh were refused for https:\/\/github.com\/org/,
      );
      expect(String(results[5])).not.toContain('wrong');
    },
  );

  it('remembers a 404 of the config URL, not a 404 of anything else', async () => {
    const clock = { now: 1_000_000 };
    const configUrl404 = new RefusingService('wrong', 404);
    const resolver = resolverWith(configUrl404, { value: 'wrong' }, clock);
    for (let i = 0; i < 5; i++) await register(resolver, `r-${i}`).catch(() => undefined);
    expect(configUrl404.calls).toBe(1);

    const runner404 = new RefusingService('wrong', 404, '/_apis/runtime/runnerscalesets/1/generatejitconfig');
    const other = resolverWith(runner404, { value: 'wrong' }, clock);
    for (let i = 0; i < 5; i++) await register(other, `r-${i}`).catch(() => undefined);
    expect(runner404.calls).toBe(5);
  });

  it('asks again once the memory expires, and at once when the credential changes', async () => {
    const service = new RefusingService('wrong', 401);
    const clock = { now: 1_000_000 };
    const token = { value: 'wrong' };
    const resolver = resolverWith(service, token, clock);
    await expect(register(resolver, 'a')).rejects.toThrow();
    await expect(register(resolver, 'b')).rejects.toThrow();
    expect(service.calls).toBe(1);
    clock.now += 60_001;
    await expect(register(resolver, 'c')).rejects.toThrow();
    expect(service.calls).toBe(2);
    token.value = 'fixed';
    await expect(register(resolver, 'd')).resolves.toMatchObject({ runner: { id: 1 } });
    expect(service.calls).toBe(3);
  });

  it('fails an invalid config URL before reading any Secret', async () => {
    const resolver = new SecretResolver({ kube: silentKube, multiClient: noMultiClient, timeoutMs: 50 });
    await expect(resolver.getActionsClient({ ...holder, githubConfigUrl: 'not a url' })).rejects.toThrow(
      /invalid config URL/,
    );
  });
});
