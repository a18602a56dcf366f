import { ConfigError, loadControllerConfig } from './config';

describe('loadControllerConfig', () => {
  it('applies the documented defaults to an empty environment', () => {
    const config = loadControllerConfig({});
    expect(config).toMatchObject({
      WATCH_NAMESPACE: '',
      MAX_CONCURRENT_RECONCILES: 2,
      UNREGISTRATION_WORKERS: 4,
      TERMINATED_POD_GRACE_PERIOD_SECONDS: 0,
      MAX_POD_FAILURES: 5,
      LEADER_ELECTION: true,
      LEASE_DURATION_SECONDS: 15,
      RENEW_DEADLINE_SECONDS: 10,
      RETRY_PERIOD_SECONDS: 2,
      LOG_FORMAT: 'json',
      PROBE_PORT: 8081,
      LISTENER_CREDENTIAL_REFRESH_SECONDS: 60,
      RUNNER_START_TIMEOUT: 600_000,
      BUSY_RUNNER_EVICTION_PROTECTION: true,
    });
  });

  it('takes the shared listener mode only with the shared listener’s account and config Secret named', () => {
    expect(loadControllerConfig({}).LISTENER_MODE).toBe('pod');
    expect(() => loadControllerConfig({ LISTENER_MODE: 'shared' })).toThrow(
      /LISTENER_SHARED_SERVICE_ACCOUNT: is required[\s\S]*LISTENER_SHARED_CONFIG_SECRET: is required/,
    );
    expect(() => loadControllerConfig({ LISTENER_MODE: 'one' })).toThrow(/LISTENER_MODE/);
    const shared = loadControllerConfig({
      LISTENER_MODE: 'shared',
      LISTENER_SHARED_SERVICE_ACCOUNT: 'arc-shared-listener',
      LISTENER_SHARED_CONFIG_SECRET: 'arc-shared-listener-configs',
    });
    expect(shared.LISTENER_MODE).toBe('shared');
  });

  it('coerces numbers and booleans from their string form', () => {
    const config = loadControllerConfig({
      MAX_CONCURRENT_RECONCILES: '8',
      LEADER_ELECTION: 'false',
      TERMINATED_POD_GRACE_PERIOD_SECONDS: '-1',
    });
    expect(config.MAX_CONCURRENT_RECONCILES).toBe(8);
    expect(config.LEADER_ELECTION).toBe(false);
    expect(config.TERMINATED_POD_GRACE_PERIOD_SECONDS).toBe(-1);
  });

  it("takes LOG_LEVEL as a name or as upstream's zap level number", () => {
    expect(loadControllerConfig({ LOG_LEVEL: '-1' }).LOG_LEVEL).toBe('debug');
    expect(loadControllerConfig({ LOG_LEVEL: '0' }).LOG_LEVEL).toBe('info');
    expect(loadControllerConfig({ LOG_LEVEL: '2' }).LOG_LEVEL).toBe('error');
    expect(loadControllerConfig({ LOG_LEVEL: 'warn' }).LOG_LEVEL).toBe('warn');
    expect(() => loadControllerConfig({ LOG_LEVEL: 'verbose' })).toThrow(
      /LOG_LEVEL: "verbose" is not a log level/,
    );
  });

  it('refuses invalid values with a message naming every bad variable', () => {
    expect(() =>
      loadControllerConfig({
        MAX_CONCURRENT_RECONCILES: 'zero',
        LOG_LEVEL: 'verbose',
        PROBE_PORT: '70000',
        LISTENER_CREDENTIAL_REFRESH_SECONDS: '1',
        RUNNER_START_TIMEOUT: 'ten minutes',
        BUSY_RUNNER_EVICTION_PROTECTION: 'maybe',
      }),
    ).toThrow(
      expect.objectContaining({
        name: 'ConfigError',
        message: expect.stringMatching(
          /MAX_CONCURRENT_RECONCILES[\s\S]*LOG_LEVEL[\s\S]*PROBE_PORT[\s\S]*LISTENER_CREDENTIAL_REFRESH_SECONDS[\s\S]*RUNNER_START_TIMEOUT[\s\S]*BUSY_RUNNER_EVICTION_PROTECTION/,
        ),
      }) as ConfigError,
    );
  });

  it('refuses leader election timings that cannot work together', () => {
    expect(() =>
      loadControllerConfig({ LEASE_DURATION_SECONDS: '10', RENEW_DEADLINE_SECONDS: '10' }),
    ).toThrow(/RENEW_DEADLINE_SECONDS: must be shorter than LEASE_DURATION_SECONDS/);
  });

  it('refuses a start timeout too short to start any pod, naming the variable', () => {
    expect(() => loadControllerConfig({ RUNNER_START_TIMEOUT: '5s' })).toThrow(
      /RUNNER_START_TIMEOUT: must be at least 10s/,
    );
  });
});
