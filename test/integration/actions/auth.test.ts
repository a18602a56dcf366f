// Contract: PAT and GitHub App authentication, every config-URL scope, and the admin-token lifecycle.
import { generateKeyPairSync } from 'node:crypto';
import { ActionsError, isUnauthorized } from '@aro/actions';
import { Registry } from 'prom-client';
import { RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import { closeClients, errorOf, simClient } from './support';

const registrationCalls = (sim: RunningSimulator) => sim.callCount('POST actions/runner-registration');

describe('Actions service client: authentication against the simulator', () => {
  let sim: RunningSimulator;

  beforeEach(async () => {
    sim = await startSimulator();
  });

  afterEach(async () => {
    await closeClients();
    await sim.stop();
  });

  describe('GitHub App', () => {
    const keys = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });

    it.each([
      ['numeric app id', (a: { appId: number; clientId: string }) => String(a.appId)],
      ['client id', (a: { appId: number; clientId: string }) => a.clientId],
    ])(
      'exchanges a JWT issued with the %s for an installation token, then for an admin token',
      async (_what, issuer) => {
        const app = sim.registerApp({ publicKeyPem: keys.publicKey });
        const installationId = sim.installApp(app.appId, { org: 'octo' });
        const client = simClient(sim, {
          credentials: { kind: 'app', appId: issuer(app), installationId, privateKey: keys.privateKey },
        });
        const ss = await client.createRunnerScaleSet({ name: 'app-set', runnerGroupId: 1 });
        expect(sim.scaleSets().map((s) => s.id)).toEqual([ss.id]);
        expect(sim.callCount('POST app/installations/{id}/access_tokens')).toBe(1);
        expect(sim.callCount('POST orgs/{org}/actions/runners/registration-token')).toBe(1);
        expect(registrationCalls(sim)).toBe(1);
      },
    );

    it('is refused when signed with a key the app was not registered with', async () => {
      const app = sim.registerApp({ publicKeyPem: keys.publicKey });
      const installationId = sim.installApp(app.appId, { org: 'octo' });
      const other = generateKeyPairSync('rsa', {
        modulusLength: 2048,
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
        publicKeyEncoding: { type: 'spki', format: 'pem' },
      });
      const client = simClient(sim, {
        credentials: { kind: 'app', appId: String(app.appId), installationId, privateKey: other.privateKey },
      });
      const err = (await errorOf(client.listRunners())) as ActionsError;
      expect(isUnauthorized(err)).toBe(true);
      expect(err.url).toContain(`/app/installations/${installationId}/access_tokens`);
      expect(err.message).toContain('signature');
    });

    it('reports NotFound for an installation the app does not have', async () => {
      const app = sim.registerApp({ publicKeyPem: keys.publicKey });
      const client = simClient(sim, {
        credentials: {
          kind: 'app',
          appId: String(app.appId),
          installationId: 987654,
          privateKey: keys.privateKey,
        },
      });
      const err = (await errorOf(client.listRunners())) as ActionsError;
      expect(err).toMatchObject({ kind: 'NotFound', statusCode: 404 });
    });
  });

  it.each([
    ['enterprise', { enterprise: 'ent' }, 'POST enterprises/{enterprise}/actions/runners/registration-token'],
    [
      'repository',
      { org: 'octo', repo: 'hello' },
      'POST repos/{owner}/{repo}/actions/runners/registration-token',
    ],
    ['organization', { org: 'octo' }, 'POST orgs/{org}/actions/runners/registration-token'],
  ] as const)('registers for the %s scope of its config URL', async (_scope, owner, route) => {
    const client = simClient(sim, { configUrl: sim.configUrl(owner) });
    const ss = await client.createRunnerScaleSet({ name: 'scoped', runnerGroupId: 1 });
    expect(sim.callCount(route)).toBe(1);
    expect(sim.scaleSets().find((s) => s.id === ss.id)?.tenantId).toBe(sim.tenantId(owner));
  });

  describe('admin token', () => {
    it('reuses the admin token while it is valid beyond the refresh margin', async () => {
      const client = simClient(sim);
      await client.listRunners();
      await client.listRunners();
      await client.getRunnerGroupByName('Default');
      expect(registrationCalls(sim)).toBe(1);
    });

    it('obtains a new admin token before each call when tokens live shorter than the 60 s margin', async () => {
      sim.setTokenLifetimes({ adminTokenSeconds: 30 });
      const registry = new Registry();
      const client = simClient(sim, { registry });
      await client.listRunners();
      await client.listRunners();
      expect(registrationCalls(sim)).toBe(2);
      expect(await registry.metrics()).toContain('actions_admin_token_refreshes_total{result="success"} 2');
    });

    it('shares one exchange among concurrent calls of a fresh client', async () => {
      const client = simClient(sim);
      await Promise.all(Array.from({ length: 10 }, () => client.listRunners()));
      expect(registrationCalls(sim)).toBe(1);
      expect(sim.callCount('GET agents')).toBe(10);
    });

    it('re-authenticates transparently when the service stops accepting the admin token', async () => {
      const client = simClient(sim);
      const ss = await client.createRunnerScaleSet({ name: 'before', runnerGroupId: 1 });
      sim.expireAdminTokens();
      const jit = await client.generateJitRunnerConfig({ name: 'after-expiry' }, ss.id);
      expect(sim.runner('after-expiry')?.id).toBe(jit.runner.id);
      expect(registrationCalls(sim)).toBe(2);
    });

    it('retries runner-registration while it is refused with 401/403', async () => {
      sim.injectFault({ route: 'POST actions/runner-registration', status: 401, times: 1 });
      sim.injectFault({ route: 'POST actions/runner-registration', status: 403, times: 1 });
      const client = simClient(sim);
      expect(await client.listRunners()).toEqual([]);
      expect(registrationCalls(sim)).toBe(3);
    });

    it('surfaces the last refusal once runner-registration retries are exhausted', async () => {
      sim.injectFault({ route: 'POST actions/runner-registration', status: 403 });
      const client = simClient(sim);
      const err = (await errorOf(client.listRunners())) as ActionsError;
      expect(err).toMatchObject({ kind: 'Unauthorized', statusCode: 403 });
      expect(registrationCalls(sim)).toBe(5);
    });
  });
});
