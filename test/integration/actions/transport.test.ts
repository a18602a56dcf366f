// Contract: retries (injected 5xx, 429 with Retry-After, dropped connections), proxies and a private CA.
import { ActionsError, ActionsServiceClient } from '@aro/actions';
import { Registry } from 'prom-client';
import { RunningSimulator, startSimulator } from '../../../apps/simulator/src';
import {
  closeClients,
  ConnectProxy,
  createPrivatePki,
  errorOf,
  PrivatePki,
  simClient,
  startConnectProxy,
  startTlsFront,
  TlsFront,
} from './support';

describe('Actions service client: transport against the simulator', () => {
  describe('retries', () => {
    let sim: RunningSimulator;
    let client: ActionsServiceClient;
    let registry: Registry;
    let scaleSetId: number;

    beforeEach(async () => {
      sim = await startSimulator();
      registry = new Registry();
      // Retry-After is capped at maxWaitMs; 1 s lets the simulator's "1 second" through unchanged.
      client = simClient(sim, { registry, retry: { maxRetries: 4, minWaitMs: 5, maxWaitMs: 1000 } });
      scaleSetId = (await client.createRunnerScaleSet({ name: 'retry-set', runnerGroupId: 1 })).id;
      sim.resetCallCounts();
    });

    afterEach(async () => {
      await closeClients();
      await sim.stop();
    });

    it('retries a GET through transient 5xx and counts each retry', async () => {
      const { runner } = await client.generateJitRunnerConfig({ name: 'r1' }, scaleSetId);
      sim.injectFault({ route: 'GET agents/{id}', status: 500, times: 1 });
      sim.injectFault({ route: 'GET agents/{id}', status: 502, times: 1 });
      expect(await client.getRunner(runner.id)).toEqual(runner);
      expect(sim.callCount('GET agents/{id}')).toBe(3);
      expect(await registry.metrics()).toContain(
        'actions_request_retries_total{route="GET agents/{id}",method="GET"} 2',
      );
    });

    it('retries a JIT config request answered 429 with Retry-After, and registers the runner once', async () => {
      sim.injectFault({
        route: 'POST runnerscalesets/{id}/generatejitconfig',
        status: 429,
        retryAfterSeconds: 1,
        times: 1,
      });
      const jit = await client.generateJitRunnerConfig({ name: 'after-429' }, scaleSetId);
      expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(2);
      expect(sim.registrations().filter((r) => r.name === 'after-429')).toEqual([
        expect.objectContaining({ id: jit.runner.id }),
      ]);
    });

    it('retries scale-set creation answered 503, which the server sends without acting', async () => {
      sim.injectFault({ route: 'POST runnerscalesets', status: 503, times: 2 });
      const created = await client.createRunnerScaleSet({ name: 'after-503', runnerGroupId: 1 });
      expect(sim.callCount('POST runnerscalesets')).toBe(3);
      expect(
        sim
          .scaleSets()
          .filter((s) => s.name === 'after-503')
          .map((s) => s.id),
      ).toEqual([created.id]);
    });

    it('does not repeat a JIT config request answered 502, which may come after the service acted', async () => {
      sim.injectFault({ route: 'POST runnerscalesets/{id}/generatejitconfig', status: 502, times: 1 });
      const err = (await errorOf(
        client.generateJitRunnerConfig({ name: 'r502' }, scaleSetId),
      )) as ActionsError;
      expect(err.statusCode).toBe(502);
      expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(1);
    });

    it('never retries 501', async () => {
      sim.injectFault({ route: 'GET runnerscalesets/{id}', status: 501, times: 1 });
      const err = (await errorOf(client.getRunnerScaleSetById(scaleSetId))) as ActionsError;
      expect(err.statusCode).toBe(501);
      expect(sim.callCount('GET runnerscalesets/{id}')).toBe(1);
    });

    it('retries a GET and a DELETE whose connection was dropped', async () => {
      const { runner } = await client.generateJitRunnerConfig({ name: 'r-drop' }, scaleSetId);
      sim.injectFault({ route: 'GET agents/{id}', drop: true, times: 1 });
      expect(await client.getRunner(runner.id)).toEqual(runner);
      expect(sim.callCount('GET agents/{id}')).toBe(2);

      sim.injectFault({ route: 'DELETE agents/{id}', drop: true, times: 1 });
      await client.removeRunner(runner.id);
      expect(sim.runner('r-drop')).toBeUndefined();
      expect(sim.callCount('DELETE agents/{id}')).toBe(2);
    });

    it('does not repeat a JIT config request or job acquisition after a dropped connection', async () => {
      sim.injectFault({ route: 'POST runnerscalesets/{id}/generatejitconfig', drop: true, times: 1 });
      const err = (await errorOf(
        client.generateJitRunnerConfig({ name: 'r-once' }, scaleSetId),
      )) as ActionsError;
      expect(err).toBeInstanceOf(ActionsError);
      expect(err.statusCode).toBeUndefined();
      expect(err.message).toContain('must not be repeated');
      expect(sim.callCount('POST runnerscalesets/{id}/generatejitconfig')).toBe(1);

      const session = await client.createMessageSession(scaleSetId, 'listener');
      const job = sim.enqueueJob({ scaleSetId });
      sim.injectFault({ route: 'POST runnerscalesets/{id}/acquirejobs', drop: true, times: 1 });
      await errorOf(client.acquireJobs(scaleSetId, session.messageQueueAccessToken, [job.runnerRequestId]));
      expect(sim.callCount('POST runnerscalesets/{id}/acquirejobs')).toBe(1);
    });

    it('gives up after four retries and reports the last status', async () => {
      sim.injectFault({ route: 'GET runnerscalesets/{id}', status: 503 });
      const err = (await errorOf(client.getRunnerScaleSetById(scaleSetId))) as ActionsError;
      expect(err.statusCode).toBe(503);
      expect(err.message).toContain('after 5 attempts');
      expect(sim.callCount('GET runnerscalesets/{id}')).toBe(5);
    });
  });

  describe('proxy', () => {
    let sim: RunningSimulator;
    let proxy: ConnectProxy;
    const simHostPort = () => new URL(sim.url).host;

    beforeEach(async () => {
      sim = await startSimulator();
    });

    afterEach(async () => {
      await closeClients();
      await proxy?.close();
      await sim.stop();
    });

    it('tunnels every call through the scale set proxy, with its credentials', async () => {
      proxy = await startConnectProxy({ user: 'aro', pass: 's3cret/+' });
      const url = new URL(proxy.url);
      url.username = 'aro';
      url.password = encodeURIComponent('s3cret/+');
      const client = simClient(sim, { proxy: { http: url.href } });
      await client.createRunnerScaleSet({ name: 'proxied', runnerGroupId: 1 });
      expect(sim.scaleSets().map((s) => s.name)).toEqual(['proxied']);
      expect(proxy.tunnels.length).toBeGreaterThan(0);
      expect(new Set(proxy.tunnels)).toEqual(new Set([simHostPort()]));
      expect(proxy.authorizations[0]).toBe(`Basic ${Buffer.from('aro:s3cret/+').toString('base64')}`);
      // A tunnel, once open, is kept alive and reused by the calls that follow.
      const tunnels = proxy.tunnels.length;
      await client.listRunners();
      await client.listRunners();
      expect(proxy.tunnels).toHaveLength(tunnels);
    });

    it('fails without retrying when the proxy refuses the credentials', async () => {
      proxy = await startConnectProxy({ user: 'aro', pass: 'right' });
      const url = new URL(proxy.url);
      url.username = 'aro';
      url.password = 'wrong';
      const client = simClient(sim, { proxy: { http: url.href } });
      const err = (await errorOf(client.listRunners())) as ActionsError;
      expect(err.message).toContain('407');
      expect(proxy.tunnels).toHaveLength(1);
      expect(sim.callCount('POST orgs/{org}/actions/runners/registration-token')).toBe(0);
    });

    it('goes direct to hosts in noProxy', async () => {
      proxy = await startConnectProxy();
      const client = simClient(sim, { proxy: { http: proxy.url, noProxy: ['example.com', '127.0.0.0/8'] } });
      expect(await client.listRunners()).toEqual([]);
      expect(proxy.tunnels).toEqual([]);
    });

    it('uses only the proxy of the request scheme: an https proxy leaves http traffic direct', async () => {
      proxy = await startConnectProxy();
      const client = simClient(sim, { proxy: { https: proxy.url } });
      expect(await client.listRunners()).toEqual([]);
      expect(proxy.tunnels).toEqual([]);
    });

    it('uses HTTP_PROXY from the environment when the client has no proxy of its own', async () => {
      proxy = await startConnectProxy();
      const saved = {
        HTTP_PROXY: process.env.HTTP_PROXY,
        http_proxy: process.env.http_proxy,
        NO_PROXY: process.env.NO_PROXY,
        no_proxy: process.env.no_proxy,
      };
      process.env.HTTP_PROXY = proxy.url;
      delete process.env.http_proxy;
      delete process.env.NO_PROXY;
      delete process.env.no_proxy;
      try {
        const client = simClient(sim);
        expect(await client.listRunners()).toEqual([]);
      } finally {
        for (const [k, v] of Object.entries(saved)) {
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
        }
      }
      expect(new Set(proxy.tunnels)).toEqual(new Set([simHostPort()]));
    });
  });

  describe('custom root CA', () => {
    let pki: PrivatePki;
    let front: TlsFront & { setTarget(port: number): void };
    let sim: RunningSimulator;

    beforeAll(async () => {
      pki = await createPrivatePki();
    });

    beforeEach(async () => {
      // The simulator hands out URLs of the TLS front, so every call (REST, Actions, queue) uses it.
      front = await startTlsFront(pki);
      sim = await startSimulator({ publicUrl: `https://127.0.0.1:${front.port}` });
      front.setTarget(sim.port);
    });

    afterEach(async () => {
      await closeClients();
      await front.close();
      await sim.stop();
    });

    it('refuses a server whose CA it was not given, without retrying', async () => {
      const client = simClient(sim);
      const err = (await errorOf(client.listRunners())) as ActionsError;
      expect(err).toBeInstanceOf(ActionsError);
      expect(err.message).toMatch(/certificate|UNABLE_TO_VERIFY/i);
      expect(err.message).toContain('not retried');
      expect(sim.callCount('POST orgs/{org}/actions/runners/registration-token')).toBe(0);
    });

    it('trusts the server with the extra root CA, for REST, Actions and queue calls', async () => {
      const client = simClient(sim, { rootCAs: [pki.caPem] });
      const ss = await client.createRunnerScaleSet({ name: 'tls-set', runnerGroupId: 1 });
      const session = await client.createMessageSession(ss.id, 'listener');
      expect(session.messageQueueUrl.startsWith(`https://127.0.0.1:${front.port}/`)).toBe(true);
      sim.enqueueJob({ scaleSetId: ss.id });
      const message = await client.getMessage(session.messageQueueUrl, session.messageQueueAccessToken, 0, 1);
      expect(message?.messageType).toBe('RunnerScaleSetJobMessages');
    });

    it('trusts the extra root CA through a proxy tunnel too', async () => {
      const proxy = await startConnectProxy();
      try {
        const client = simClient(sim, { rootCAs: [pki.caPem], proxy: { https: proxy.url } });
        expect(await client.listRunners()).toEqual([]);
        expect(new Set(proxy.tunnels)).toEqual(new Set([`127.0.0.1:${front.port}`]));
      } finally {
        await closeClients();
        await proxy.close();
      }
    });
  });
});
