import { silentLogger } from '@aro/observability';
import { loadControllerConfig } from './config';
import { moduleOptionsFrom } from './controller-app.module';

/** Each environment variable reaches the module that acts on it, in the unit that module expects. */
describe('moduleOptionsFrom', () => {
  const optionsFor = (env: NodeJS.ProcessEnv) =>
    moduleOptionsFrom({ config: loadControllerConfig(env), logger: silentLogger });

  it('gives the listener controller its credential refresh interval in milliseconds', () => {
    expect(optionsFor({}).autoscalingListener.credentialRefreshIntervalMs).toBe(60_000);
    expect(
      optionsFor({ LISTENER_CREDENTIAL_REFRESH_SECONDS: '15' }).autoscalingListener
        .credentialRefreshIntervalMs,
    ).toBe(15_000);
  });

  it("gives the listener pods the chart's image pull secrets (upstream's --auto-scaler-image-pull-secrets)", () => {
    expect(optionsFor({}).autoscalingRunnerSet.listenerImagePullSecrets).toEqual([]);
    expect(
      optionsFor({ LISTENER_IMAGE_PULL_SECRETS: 'regcred, mirror-cred' }).autoscalingRunnerSet
        .listenerImagePullSecrets,
    ).toEqual(['regcred', 'mirror-cred']);
  });

  it('gives the orphan sweep its interval and grace in milliseconds', () => {
    const { unregistration } = optionsFor({ ORPHAN_SWEEP_INTERVAL_SECONDS: '30', ORPHAN_GRACE_SECONDS: '0' });
    expect(unregistration).toMatchObject({ orphanSweepIntervalMs: 30_000, orphanGraceMs: 0 });
  });

  it('gives the runner controller its start timeout in milliseconds and its eviction protection', () => {
    expect(optionsFor({}).ephemeralRunner).toMatchObject({
      startTimeoutMs: 600_000,
      evictionProtection: true,
    });
    expect(
      optionsFor({ RUNNER_START_TIMEOUT: '1h30m', BUSY_RUNNER_EVICTION_PROTECTION: 'false' }).ephemeralRunner,
    ).toMatchObject({ startTimeoutMs: 5_400_000, evictionProtection: false });
    expect(optionsFor({ RUNNER_START_TIMEOUT: '90' }).ephemeralRunner.startTimeoutMs).toBe(90_000);
  });
});
