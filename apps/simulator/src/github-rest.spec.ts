import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { startSimulator, type RunningSimulator } from './index';
import { appJwt, call, jwtClaims, obj, registrationToken, signRs256 } from './spec-helpers';

describe('simulator GitHub REST (GHES-shaped, /api/v3)', () => {
  let sim: RunningSimulator;
  let appKey: KeyObject;
  let otherKey: KeyObject;
  let appId: number;
  let clientId: string;
  let octoInstallation: number;

  beforeAll(async () => {
    const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
    appKey = pair.privateKey;
    otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    sim = await startSimulator({
      seed: {
        orgs: [{ name: 'other' }],
        pats: [{ token: 'ghp_only_hello', owners: [{ org: 'octo', repo: 'hello' }] }],
        apps: [
          {
            appId: 4242,
            clientId: 'Iv1.simtestapp',
            publicKeyPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
            installations: [{ org: 'octo' }],
          },
        ],
      },
    });
    const app = sim.apps()[0];
    appId = app.appId;
    clientId = app.clientId;
    octoInstallation = app.installations[0].installationId;
  });

  afterAll(() => sim.stop());

  const accessTokens = (installationId: number, jwt: string) =>
    call('POST', `${sim.url}/api/v3/app/installations/${installationId}/access_tokens`, {
      auth: `Bearer ${jwt}`,
    });

  describe('app installation access tokens', () => {
    it('issues a ghs_ token for a JWT whose iss is the app id', async () => {
      const r = await accessTokens(octoInstallation, appJwt(appKey, appId));
      expect(r.status).toBe(201);
      expect(obj(r).token).toMatch(/^ghs_/);
      expect(Date.parse(obj(r).expires_at as string)).toBeGreaterThan(Date.now());
      expect(r.headers.get('x-github-request-id')).toBeTruthy();
      expect(r.headers.get('activityid')).toBeTruthy();
    });

    it('accepts the client id as iss', async () => {
      expect((await accessTokens(octoInstallation, appJwt(appKey, clientId))).status).toBe(201);
    });

    it('answers 401 to a JWT signed with another key', async () => {
      const r = await accessTokens(octoInstallation, appJwt(otherKey, appId));
      expect(r.status).toBe(401);
      expect(obj(r).message).toMatch(/signature/);
    });

    it('answers 401 to an expired JWT, one that lives over 10 minutes, an unknown iss, and garbage', async () => {
      const now = Math.floor(Date.now() / 1000);
      const expired = signRs256({ iat: now - 700, exp: now - 100, iss: String(appId) }, appKey);
      const tooLong = signRs256({ iat: now, exp: now + 3600, iss: String(appId) }, appKey);
      const stranger = appJwt(appKey, 9999);
      for (const jwt of [expired, tooLong, stranger, 'not-a-jwt']) {
        expect((await accessTokens(octoInstallation, jwt)).status).toBe(401);
      }
      expect(
        (await call('POST', `${sim.url}/api/v3/app/installations/${octoInstallation}/access_tokens`)).status,
      ).toBe(401);
    });

    it('answers 404 for an installation the app does not have', async () => {
      expect((await accessTokens(987654, appJwt(appKey, appId))).status).toBe(404);
    });

    it('lets an installation token fetch registration tokens for its owner and its repos, 403 elsewhere', async () => {
      const ghs = obj(await accessTokens(octoInstallation, appJwt(appKey, appId))).token as string;
      await expect(registrationToken(sim, { org: 'octo' }, ghs)).resolves.toMatch(/^[0-9A-F]{40}$/);
      await expect(registrationToken(sim, { org: 'octo', repo: 'hello' }, ghs)).resolves.toBeTruthy();
      const r = await call('POST', `${sim.url}/api/v3/orgs/other/actions/runners/registration-token`, {
        auth: `Bearer ${ghs}`,
      });
      expect(r.status).toBe(403);
    });

    it('stops honouring an installation token after its lifetime', async () => {
      const ghs = obj(await accessTokens(octoInstallation, appJwt(appKey, appId))).token as string;
      sim.advanceClock(sim.tokenLifetimes().installationTokenSeconds * 1000 + 1000);
      const r = await call('POST', `${sim.url}/api/v3/orgs/octo/actions/runners/registration-token`, {
        auth: `Bearer ${ghs}`,
      });
      expect(r.status).toBe(401);
    });
  });

  describe('registration tokens', () => {
    it.each([
      ['orgs/octo', 'org'],
      ['enterprises/ent', 'enterprise'],
      ['repos/octo/hello', 'repo'],
    ])('issues a token for %s (%s scope) with the default PAT', async (path) => {
      const r = await call('POST', `${sim.url}/api/v3/${path}/actions/runners/registration-token`, {
        auth: 'Bearer ghp_simulator',
      });
      expect(r.status).toBe(201);
      expect(obj(r).token).toEqual(expect.any(String));
      expect(obj(r).expires_at).toMatch(/\+00:00$/);
      expect(r.headers.get('x-github-request-id')).toBeTruthy();
    });

    it('answers 401 to a missing or unknown token and 404 to an unknown owner', async () => {
      const url = `${sim.url}/api/v3/orgs/octo/actions/runners/registration-token`;
      expect((await call('POST', url)).status).toBe(401);
      expect((await call('POST', url, { auth: 'Bearer ghp_wrong' })).status).toBe(401);
      const unknown = await call('POST', `${sim.url}/api/v3/orgs/nobody/actions/runners/registration-token`, {
        auth: 'Bearer ghp_simulator',
      });
      expect(unknown.status).toBe(404);
      expect(obj(unknown).message).toBe('Not Found');
    });

    it('limits a PAT to the owners it was created for', async () => {
      await expect(
        registrationToken(sim, { org: 'octo', repo: 'hello' }, 'ghp_only_hello'),
      ).resolves.toBeTruthy();
      const r = await call('POST', `${sim.url}/api/v3/orgs/octo/actions/runners/registration-token`, {
        auth: 'Bearer ghp_only_hello',
      });
      expect(r.status).toBe(403);
    });
  });

  describe('runner-registration', () => {
    const register = (auth: string, url: string) =>
      call('POST', `${sim.url}/api/v3/actions/runner-registration`, {
        auth,
        body: { url, runner_event: 'register' },
      });

    it('returns the tenant base URL and an admin JWT whose exp follows the configured lifetime', async () => {
      sim.setTokenLifetimes({ adminTokenSeconds: 90 });
      try {
        const token = await registrationToken(sim, { org: 'octo' });
        const r = await register(`RemoteAuth ${token}`, sim.configUrl({ org: 'octo' }));
        expect(r.status).toBe(201);
        const body = obj(r);
        expect(body.url).toBe(`${sim.url}/tenant/${sim.tenantId({ org: 'octo' })}/`);
        const claims = jwtClaims(body.token as string);
        expect(typeof claims.exp).toBe('number');
        expect((claims.exp as number) - Math.floor(sim.now().getTime() / 1000)).toBeGreaterThan(85);
        expect((claims.exp as number) - Math.floor(sim.now().getTime() / 1000)).toBeLessThanOrEqual(90);
      } finally {
        sim.setTokenLifetimes({ adminTokenSeconds: 3600 });
      }
    });

    it('gives each owner scope its own tenant', async () => {
      const ent = obj(
        await register(
          `RemoteAuth ${await registrationToken(sim, { enterprise: 'ent' })}`,
          sim.configUrl({ enterprise: 'ent' }),
        ),
      );
      const repo = obj(
        await register(
          `RemoteAuth ${await registrationToken(sim, { org: 'octo', repo: 'hello' })}`,
          `${sim.configUrl({ org: 'octo', repo: 'hello' })}/`,
        ),
      );
      expect(ent.url).toBe(`${sim.url}/tenant/${sim.tenantId({ enterprise: 'ent' })}/`);
      expect(repo.url).toBe(`${sim.url}/tenant/${sim.tenantId({ org: 'octo', repo: 'hello' })}/`);
      expect(ent.url).not.toBe(repo.url);
    });

    it('refuses a Bearer scheme, an unknown token (401) and a URL of another scope (404)', async () => {
      const token = await registrationToken(sim, { org: 'octo' });
      expect((await register(`Bearer ${token}`, sim.configUrl({ org: 'octo' }))).status).toBe(401);
      expect((await register('RemoteAuth NOPE', sim.configUrl({ org: 'octo' }))).status).toBe(401);
      expect(
        (await register(`RemoteAuth ${token}`, sim.configUrl({ org: 'octo', repo: 'hello' }))).status,
      ).toBe(404);
      expect((await register(`RemoteAuth ${token}`, `${sim.url}/a/b/c`)).status).toBe(400);
    });

    it('refuses a registration token after its lifetime', async () => {
      const token = await registrationToken(sim, { org: 'octo' });
      sim.advanceClock(sim.tokenLifetimes().registrationTokenSeconds * 1000 + 1000);
      expect((await register(`RemoteAuth ${token}`, sim.configUrl({ org: 'octo' }))).status).toBe(401);
    });

    it('answers the first N calls with injected 401/403 and then succeeds', async () => {
      const token = await registrationToken(sim, { org: 'octo' });
      sim.injectFault({ route: 'POST actions/runner-registration', status: 401, times: 2 });
      sim.injectFault({ route: 'POST actions/runner-registration', status: 403, times: 1 });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++)
        statuses.push((await register(`RemoteAuth ${token}`, sim.configUrl({ org: 'octo' }))).status);
      expect(statuses).toEqual([401, 401, 403, 201]);
      expect(sim.faults()).toEqual([]);
    });
  });
});
