import { PassThrough } from 'node:stream';
import type { CoreV1Event, V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  ListenerConfig,
  ListenerDefaults,
  autoscalingListenerName,
} from '@aro/api';
import { EventKind, SecretKind } from '@aro/kube';
import { createLogger } from '@aro/observability';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { RunnerPlayer, testKubeConfig, waitFor } from '../../harness';
import { KeyVaultFixture, startKeyVault } from '../../harness/azure-key-vault';
import { ConnectProxy, startConnectProxy } from '../actions/support';
import {
  ScaleSetFixture,
  live,
  autoscalingRunnerSet,
  scaleSetSuite,
  uniqueName,
  waitForRunners,
} from './fixture';

jest.setTimeout(180_000);

/**
 * Scale sets whose GitHub config lives in Azure Key Vault (`vaultConfig.type: azure_key_vault`), on the
 * real control plane with the controller app's own graph, against the simulator and its Key Vault /
 * Entra ID stand-in (TLS with the test's CA, given to the controller as AZURE_KEY_VAULT_CA_FILE). No
 * GitHub Secret exists in the cluster: every credential the controller uses came from the vault.
 */
describe('AutoscalingRunnerSet with its GitHub config in Azure Key Vault', () => {
  const suite = scaleSetSuite();
  let vault: KeyVaultFixture;
  let proxy: ConnectProxy;
  let f: ScaleSetFixture;
  const logLines: string[] = [];

  beforeAll(async () => {
    vault = await startKeyVault();
    proxy = await startConnectProxy();
    vault.standIn.setSecret('gh-config-kv', JSON.stringify({ github_token: DEFAULT_PAT }));
  });
  afterAll(async () => {
    await proxy?.close();
    await vault?.close();
  });

  async function start(): Promise<ScaleSetFixture> {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logLines.push(...chunk.toString().split('\n').filter(Boolean)));
    f = await suite.start({
      skipSecret: true,
      logger: createLogger({ level: 'debug', format: 'json', destination: stream }),
      env: {
        AZURE_AUTHORITY_HOST: vault.standIn.url,
        AZURE_KEY_VAULT_DISABLE_INSTANCE_DISCOVERY: 'true',
        // The stand-in is 127.0.0.1, not a *.vault.azure.net name its challenge resource would match.
        AZURE_KEY_VAULT_DISABLE_CHALLENGE_RESOURCE_VERIFICATION: 'true',
        AZURE_KEY_VAULT_CA_FILE: vault.caFile,
      },
    });
    return f;
  }

  function vaultScaleSet(name: string, key: string, proxied: boolean): AutoscalingRunnerSet {
    return autoscalingRunnerSet(f, name, 2, {
      githubConfigSecret: key,
      vaultConfig: {
        type: 'azure_key_vault',
        azureKeyVault: vault.config,
        ...(proxied ? { proxy: { https: { url: proxy.url } } } : {}),
      },
    });
  }

  const readArs = (name: string) => f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
  const events = async (name: string) =>
    (await f.list<CoreV1Event>(EventKind)).filter((e) => e.involvedObject?.name === name);

  it('gets a scale set, a listener config and runners that run jobs, through the vault proxy', async () => {
    await start();
    const name = uniqueName('akv');
    const tunnelsBefore = proxy.tunnels.length;
    await f.kube.create(AutoscalingRunnerSetKind, vaultScaleSet(name, 'gh-config-kv', true));
    const ars = await waitFor(
      async () => {
        const a = await readArs(name);
        return a?.metadata?.annotations?.[Annotations.runnerScaleSetId] ? a : undefined;
      },
      { description: `AutoscalingRunnerSet ${name} with a scale set`, timeoutMs: 60_000 },
    );
    expect(suite.sim.scaleSets().some((s) => s.name === name)).toBe(true);
    // The vault was read through the set's vaultConfig.proxy.
    expect(proxy.tunnels.slice(tunnelsBefore)).toContain(`127.0.0.1:${new URL(vault.standIn.url).port}`);

    // The listener gets the vault's credentials resolved: its pod needs neither the vault nor a cert.
    const listener = autoscalingListenerName(name, f.namespace, '', f.configUrl);
    const config = await waitFor(
      async () => {
        const secret = await f.read<V1Secret>(SecretKind, `${listener}-config`, f.controllerNamespace);
        const data = secret?.data?.[ListenerDefaults.configSecretKey];
        return data ? (JSON.parse(Buffer.from(data, 'base64').toString()) as ListenerConfig) : undefined;
      },
      { description: 'the listener config secret', timeoutMs: 60_000 },
    );
    expect(config).toMatchObject({ github_token: DEFAULT_PAT });
    expect(config.vault_type).toBeUndefined();

    // Two jobs queued; scaled as the listener would; each runner registers with vault credentials and
    // runs its job to the end.
    const scaleSetId = Number(ars.metadata!.annotations![Annotations.runnerScaleSetId]);
    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace: f.namespace,
      service: suite.sim,
      jobDurationMs: 200,
      pollIntervalMs: 100,
    }).start();
    try {
      const ers = await waitFor(
        async () =>
          (await f.list<EphemeralRunnerSet>(EphemeralRunnerSetKind)).find((s) =>
            s.metadata?.ownerReferences?.some((o) => o.name === name),
          ),
        { description: 'the EphemeralRunnerSet' },
      );
      const jobs = [suite.sim.enqueueJob({ scaleSetId }), suite.sim.enqueueJob({ scaleSetId })];
      await f.scale(ers.metadata!.name!, 2, 1);
      const runners = await waitForRunners(
        f,
        ers.metadata!.name!,
        (r) => live(r).length === 2,
        'two runners',
      );
      for (const [i, runner] of runners.entries()) {
        const runnerName = runner.metadata!.name!;
        await waitFor(() => suite.sim.runner(runnerName), { description: `registration of ${runnerName}` });
        suite.sim.assignJobToRunner(runnerName, jobs[i].jobId);
      }
      for (const job of jobs) {
        await waitFor(() => suite.sim.job(job.jobId)?.state === 'completed', {
          description: `job ${job.jobId} completed`,
          timeoutMs: 60_000,
        });
        expect(suite.sim.job(job.jobId)?.result).toBe('succeeded');
      }
    } finally {
      await player.stop();
    }
    // No GitHub Secret was ever made in the runners' namespace.
    const secrets = await f.list<V1Secret>(SecretKind);
    expect(secrets.some((s) => s.data?.github_token !== undefined)).toBe(false);
    expect(vault.standIn.secretReads('gh-config-kv')).toBeGreaterThan(0);
    expect(logLines.join('\n')).not.toContain(DEFAULT_PAT);
  });

  it('names the set and the vault key in its status and a Warning Event when the key is missing or the vault refuses', async () => {
    await start();
    const check = async (name: string, key: string, detail: string) => {
      const failed = await waitFor(
        async () => {
          const c = (await readArs(name))?.status?.conditions?.find((x) => x.type === 'ScaleSetReady');
          return c?.status === 'False' ? c : undefined;
        },
        { description: `ScaleSetReady False on ${name}`, timeoutMs: 60_000 },
      );
      expect(failed.reason).toBe('VaultFailure');
      expect(failed.message).toContain(`vault secret ${f.namespace}/${key}: ${detail}`);
      expect(failed.message).toContain(`AutoscalingRunnerSet ${name}`);
      const warning = await waitFor(
        async () => (await events(name)).find((e) => e.type === 'Warning' && e.reason === 'VaultFailure'),
        { description: `the Warning Event on ${name}` },
      );
      expect(warning.message).toContain(`vault secret ${f.namespace}/${key}`);
      expect(suite.sim.scaleSets().some((s) => s.name === name)).toBe(false);
    };

    const missing = uniqueName('akv-missing');
    await f.kube.create(AutoscalingRunnerSetKind, vaultScaleSet(missing, 'no-such-key', false));
    await check(missing, 'no-such-key', 'not found in the vault');

    vault.standIn.deny(vault.config.clientId);
    try {
      const denied = uniqueName('akv-denied');
      await f.kube.create(AutoscalingRunnerSetKind, vaultScaleSet(denied, 'gh-config-kv', false));
      await check(denied, 'gh-config-kv', `the vault refused app ${vault.config.clientId} access (403)`);
    } finally {
      vault.standIn.allow(vault.config.clientId);
    }
    expect(logLines.join('\n')).not.toContain(DEFAULT_PAT);
  });

  it('calls a vault outage VaultUnavailable on the set, retries it with backoff, and runners wait it out', async () => {
    await start();
    const key = 'gh-config-outage';
    vault.standIn.setSecret(key, JSON.stringify({ github_token: DEFAULT_PAT }));
    const outageAnswers = () =>
      vault.standIn.requests.filter((r) => r.outage === 'vault' && r.path.startsWith(`/secrets/${key}/`))
        .length;
    const name = uniqueName('akv-outage');
    const scaleSetReady = async () =>
      (await readArs(name))?.status?.conditions?.find((x) => x.type === 'ScaleSetReady');

    // The vault answers 503 from before the set exists.
    vault.standIn.startOutage('vault', { status: 503 });
    let outageEnded = false;
    try {
      await f.kube.create(AutoscalingRunnerSetKind, vaultScaleSet(name, key, false));
      const failed = await waitFor(
        async () => {
          const c = await scaleSetReady();
          return c?.status === 'False' ? c : undefined;
        },
        { description: `ScaleSetReady False on ${name}`, timeoutMs: 60_000 },
      );
      expect(failed.reason).toBe('VaultUnavailable');
      expect(failed.message).toContain(
        `vault secret ${f.namespace}/${key}: Azure Key Vault ${vault.standIn.url} unavailable: the vault answered 503 ServiceUnavailable`,
      );
      expect(failed.message).toContain(`AutoscalingRunnerSet ${name}`);
      const warning = await waitFor(
        async () => (await events(name)).find((e) => e.type === 'Warning' && e.reason === 'VaultUnavailable'),
        { description: `the VaultUnavailable Warning Event on ${name}` },
      );
      expect(warning.message).toContain(`Azure Key Vault ${vault.standIn.url} unavailable`);

      // Backoff, not a hot loop: each attempt the controller logs waits longer than the one before,
      // and the vault saw no more reads than those attempts make (the SDK's own retries included).
      const attempts = await waitFor(
        () => {
          const seen = logLines
            .filter((l) => l.includes('Cannot reach the runner scale set') && l.includes(name))
            .map((l) => JSON.parse(l) as { reason?: string; attempts?: number; retryInMs?: number });
          return seen.length >= 3 ? seen : undefined;
        },
        { description: `three attempts of ${name} logged`, timeoutMs: 60_000 },
      );
      expect(attempts.every((a) => a.reason === 'VaultUnavailable')).toBe(true);
      expect(attempts[1].retryInMs!).toBeGreaterThan(attempts[0].retryInMs!);
      expect(attempts[2].retryInMs!).toBeGreaterThan(attempts[1].retryInMs!);
      const sdkAttemptsPerRead = 3; // the controller's vault client: one read and two SDK retries
      const loggedAttempts = logLines.filter(
        (l) => l.includes('Cannot reach the runner scale set') && l.includes(name),
      ).length;
      expect(outageAnswers()).toBeLessThanOrEqual((loggedAttempts + 1) * sdkAttemptsPerRead);
      expect(suite.sim.scaleSets().some((s) => s.name === name)).toBe(false);

      // The vault is back: the set gets its scale set with no one touching it.
      vault.standIn.endOutage('vault');
      outageEnded = true;
      await waitFor(async () => ((await scaleSetReady())?.status === 'True' ? true : undefined), {
        description: `ScaleSetReady True on ${name} after the outage`,
        timeoutMs: 60_000,
      });
    } finally {
      if (!outageEnded) vault.standIn.endOutage('vault');
    }
    const ars = (await readArs(name))!;
    const scaleSetId = Number(ars.metadata!.annotations![Annotations.runnerScaleSetId]);
    expect(suite.sim.scaleSets().some((s) => s.id === scaleSetId && s.name === name)).toBe(true);

    // A runner made while the vault is out cannot register; it is not failed for it, and registers
    // and runs its job once the vault is back.
    const ers = await waitFor(
      async () =>
        (await f.list<EphemeralRunnerSet>(EphemeralRunnerSetKind)).find((s) =>
          s.metadata?.ownerReferences?.some((o) => o.name === name),
        ),
      { description: 'the EphemeralRunnerSet' },
    );
    const player = new RunnerPlayer({
      kubeConfig: testKubeConfig(),
      namespace: f.namespace,
      service: suite.sim,
      jobDurationMs: 200,
      pollIntervalMs: 100,
    }).start();
    try {
      const job = suite.sim.enqueueJob({ scaleSetId });
      vault.standIn.startOutage('vault', 'reset');
      outageEnded = false;
      try {
        await f.scale(ers.metadata!.name!, 1, 1);
        const [runner] = await waitForRunners(
          f,
          ers.metadata!.name!,
          (r) => live(r).length === 1,
          'a runner',
        );
        const runnerName = runner.metadata!.name!;
        const refused = await waitFor(
          async () =>
            (await events(runnerName)).find((e) => e.type === 'Warning' && e.reason === 'RegistrationFailed'),
          { description: `RegistrationFailed on ${runnerName} during the outage`, timeoutMs: 60_000 },
        );
        expect(refused.message).toContain(
          `vault secret ${f.namespace}/${key}: Azure Key Vault ${vault.standIn.url} unavailable: the vault could not be reached (ECONNRESET)`,
        );
        expect(suite.sim.runner(runnerName)).toBeUndefined();
        vault.standIn.endOutage('vault');
        outageEnded = true;
        await waitFor(() => suite.sim.runner(runnerName), {
          description: `registration of ${runnerName} after the outage`,
          timeoutMs: 60_000,
        });
        // The same EphemeralRunner, never failed.
        const after = await f.read<EphemeralRunner>(EphemeralRunnerKind, runnerName);
        expect(after?.metadata?.uid).toBe(runner.metadata!.uid);
        expect(after?.status?.phase).not.toBe('Failed');
        suite.sim.assignJobToRunner(runnerName, job.jobId);
      } finally {
        if (!outageEnded) vault.standIn.endOutage('vault');
      }
      await waitFor(() => suite.sim.job(job.jobId)?.state === 'completed', {
        description: `job ${job.jobId} completed`,
        timeoutMs: 60_000,
      });
      expect(suite.sim.job(job.jobId)?.result).toBe('succeeded');
    } finally {
      await player.stop();
    }
    expect(logLines.join('\n')).not.toContain(DEFAULT_PAT);
  });
});
