import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, parseServeAddress, validateListenerConfig } from './config';

const base = {
  configure_url: 'https://github.com/octo',
  github_token: 'ghp_x',
  ephemeral_runner_set_namespace: 'arc-runners',
  ephemeral_runner_set_name: 'arc-set',
  max_runners: 10,
  min_runners: 1,
  runner_scale_set_id: 5,
  runner_scale_set_name: 'arc-set',
};

function problems(input: unknown): string {
  try {
    validateListenerConfig(input);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the config was accepted');
}

describe('listener config', () => {
  it('reads upstream config.json names, with defaults for what is left out', () => {
    const c = validateListenerConfig(base);
    expect(c).toMatchObject({
      configUrl: 'https://github.com/octo',
      credentials: { kind: 'pat', token: 'ghp_x' },
      ephemeralRunnerSetNamespace: 'arc-runners',
      ephemeralRunnerSetName: 'arc-set',
      scaleSetId: 5,
      minRunners: 1,
      maxRunners: 10,
      logLevel: 'info',
      logFormat: 'json',
      serve: { host: '0.0.0.0', port: 8080 },
      metricsEndpoint: '/metrics',
      rootCAs: [],
    });
  });

  it('takes a GitHub App triple, the proxy and the extra CA', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    const c = validateListenerConfig({
      ...base,
      github_token: undefined,
      github_app_id: '123',
      github_app_installation_id: 456,
      github_app_private_key: pem,
      proxy: { https: 'http://u:p@proxy:3128', no_proxy: ['.corp'] },
      server_root_ca: '-----BEGIN CERTIFICATE-----\n...',
      metrics_addr: '0',
    });
    expect(c.credentials).toEqual({ kind: 'app', appId: '123', installationId: 456, privateKey: pem });
    expect(c.proxy).toEqual({ http: undefined, https: 'http://u:p@proxy:3128', noProxy: ['.corp'] });
    expect(c.rootCAs).toHaveLength(1);
    expect(c.serve).toBeUndefined();
  });

  it.each([
    [{ ...base, runner_scale_set_id: 0 }, 'runner_scale_set_id'],
    [{ ...base, ephemeral_runner_set_name: '' }, 'ephemeral_runner_set_name'],
    [{ ...base, min_runners: 11 }, 'min_runners: 11 cannot be greater than max_runners 10'],
    [{ ...base, max_runners: -1 }, 'max_runners'],
    [{ ...base, configure_url: 'https://github.com' }, 'configure_url'],
    [{ ...base, github_token: undefined }, 'github_token: is required'],
    [{ ...base, github_app_id: '1' }, 'github_token: set either github_token or the github_app_* fields'],
    [{ ...base, github_token: undefined, github_app_id: '1' }, 'github_app_id'],
    [
      {
        ...base,
        github_token: undefined,
        github_app_id: '1',
        github_app_installation_id: 2,
        github_app_private_key: 'nope',
      },
      'github_app_private_key',
    ],
    [{ ...base, vault_type: 'azure_key_vault' }, 'vault_type'],
    [{ ...base, log_level: 'verbose' }, 'log_level'],
    [{ ...base, metrics_addr: 'localhost' }, 'metrics_addr'],
    [{ ...base, metrics_endpoint: 'metrics' }, 'metrics_endpoint'],
    [{ ...base, max_runners: '10' }, 'max_runners: must be an integer'],
    [{ ...base, metrics: { gauges: { gha_busy_runners: {} } } }, 'metrics.gauges.gha_busy_runners.labels'],
    [{ ...base, proxy: { no_proxy: '.corp' } }, 'proxy.no_proxy'],
    [[base], '(config): must be a JSON object'],
  ])('refuses a bad config naming the field (%#)', (input, field) => {
    expect(problems(input)).toContain(field);
  });

  it('parses listen addresses', () => {
    expect(parseServeAddress(':8080')).toEqual({ host: '0.0.0.0', port: 8080 });
    expect(parseServeAddress('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseServeAddress('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(parseServeAddress('')).toBeUndefined();
    expect(parseServeAddress('0')).toBeUndefined();
  });

  it('reads warm_headroom (ARO): off when absent or at max_runners 0, the window 300 s unless given', () => {
    expect(validateListenerConfig(base).warmHeadroom).toBeUndefined();
    expect(
      validateListenerConfig({ ...base, warm_headroom: { max_runners: 0, window_seconds: 60 } }).warmHeadroom,
    ).toBeUndefined();
    expect(validateListenerConfig({ ...base, warm_headroom: { max_runners: 4 } }).warmHeadroom).toEqual({
      maxRunners: 4,
      windowMs: 300_000,
    });
    expect(
      validateListenerConfig({ ...base, warm_headroom: { max_runners: 4, window_seconds: 30 } }).warmHeadroom,
    ).toEqual({ maxRunners: 4, windowMs: 30_000 });
    expect(problems({ ...base, warm_headroom: { max_runners: -1, window_seconds: 0 } })).toMatch(
      /warm_headroom\.max_runners: -1 is out of range[\s\S]*warm_headroom\.window_seconds: 0 is out of range/,
    );
  });
});
