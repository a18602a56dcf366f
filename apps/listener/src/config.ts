import { readFileSync } from 'node:fs';
import { DEFAULT_WARM_HEADROOM_WINDOW_SECONDS, ListenerDefaults, type ListenerConfig } from '@aro/api/lean';
import {
  GitHubCredentials,
  ProxySettings,
  createAppJwt,
  parseGitHubConfigUrl,
  validateCredentials,
} from '@aro/actions/lean';
import type { WarmHeadroomSettings } from './headroom';

/** The largest maxRunners upstream accepts (an AutoscalingRunnerSet without maxRunners gets this). */
const MAX_INT32 = 2 ** 31 - 1;

type Json = Record<string, unknown>;

/**
 * Reads the fields of config.json one by one, collecting a problem per bad field, so one message names
 * them all. Written by hand rather than with zod: zod alone costs the listener process ~4 MiB of its
 * ~100 MiB (docs/performance.md), for twenty fields.
 */
class FieldReader {
  readonly problems: string[] = [];

  constructor(private readonly c: Json) {}

  problem(field: string, message: string): void {
    this.problems.push(`  ${field}: ${message}`);
  }

  /** A string, or undefined when absent; `required` refuses absent and empty. */
  string(field: string, required = false): string | undefined {
    const v = this.c[field];
    if (v === undefined || v === null) {
      if (required) this.problem(field, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') {
      this.problem(field, `must be a string, not ${typeof v}`);
      return undefined;
    }
    if (required && v === '') this.problem(field, 'is required');
    return v;
  }

  /** An integer in [min, MAX_INT32]; `missing` is the message when it is absent. */
  int(field: string, min: number, missing = 'is required'): number {
    const v = this.c[field];
    if (v === undefined || v === null) {
      this.problem(field, missing);
      return 0;
    }
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      this.problem(field, `must be an integer, not ${JSON.stringify(v)}`);
      return 0;
    }
    if (v < min || v > MAX_INT32) {
      this.problem(
        field,
        v < min && field === 'runner_scale_set_id' ? missing : `${v} is out of range [${min}, ${MAX_INT32}]`,
      );
    }
    return v;
  }

  /** One of `values`, case-insensitive, `fallback` when absent or empty. */
  oneOf<T extends string>(field: string, values: readonly T[], fallback: T): T {
    const v = this.string(field);
    if (!v) return fallback;
    const lower = v.toLowerCase() as T;
    if (values.includes(lower)) return lower;
    this.problem(field, `${JSON.stringify(v)} must be one of ${values.join(', ')}`);
    return fallback;
  }

  object(field: string): Json | undefined {
    const v = this.c[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) {
      this.problem(field, 'must be an object');
      return undefined;
    }
    return v as Json;
  }

  stringList(field: string, v: unknown): string[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      this.problem(field, 'must be a list of strings');
      return undefined;
    }
    return v as string[];
  }
}

/** `metrics`: which gha_* metrics and labels to publish (upstream's listenerMetrics). */
function readMetrics(r: FieldReader): ListenerConfig['metrics'] {
  const m = r.object('metrics');
  if (!m) return undefined;
  const families = (kind: 'counters' | 'gauges' | 'histograms') => {
    const v = m[kind];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) {
      r.problem(`metrics.${kind}`, 'must be an object');
      return undefined;
    }
    const out: Record<string, { labels: string[]; buckets?: number[] }> = {};
    for (const [name, cfg] of Object.entries(v as Json)) {
      const f = cfg as Json | null;
      const labels = r.stringList(`metrics.${kind}.${name}.labels`, f?.labels);
      const buckets = f?.buckets;
      if (
        kind === 'histograms' &&
        buckets !== undefined &&
        (!Array.isArray(buckets) || buckets.some((b) => typeof b !== 'number'))
      ) {
        r.problem(`metrics.${kind}.${name}.buckets`, 'must be a list of numbers');
      }
      if (!labels) {
        if (f?.labels === undefined) r.problem(`metrics.${kind}.${name}.labels`, 'is required');
        continue;
      }
      out[name] =
        kind === 'histograms' && Array.isArray(buckets)
          ? { labels, buckets: buckets as number[] }
          : { labels };
    }
    return out;
  };
  return { counters: families('counters'), gauges: families('gauges'), histograms: families('histograms') };
}

/** `warm_headroom` (ARO): max_runners 0 is off; window_seconds, whole seconds above 0, defaults to 300. */
function readWarmHeadroom(r: FieldReader): WarmHeadroomSettings | undefined {
  const h = r.object('warm_headroom');
  if (!h) return undefined;
  const sub = new FieldReader(h);
  const maxRunners = sub.int('max_runners', 0);
  const windowSeconds =
    h.window_seconds === undefined ? DEFAULT_WARM_HEADROOM_WINDOW_SECONDS : sub.int('window_seconds', 1);
  for (const p of sub.problems) r.problems.push(p.replace(/^ {2}/, '  warm_headroom.'));
  if (sub.problems.length > 0 || maxRunners === 0) return undefined;
  return { maxRunners, windowMs: windowSeconds * 1000 };
}

/**
 * The JSON the AutoscalingListener controller writes into the listener's config secret (upstream's
 * config.json names, see @aro/api ListenerConfig). Unknown keys are kept out of the way, not refused:
 * a newer controller may write a field this listener does not know yet.
 */
function readListenerConfig(input: Json) {
  const r = new FieldReader(input);
  const configureUrl = r.string('configure_url', true) ?? '';
  const githubToken = r.string('github_token');
  const rawAppId = input.github_app_id;
  let githubAppId: string | undefined;
  if (typeof rawAppId === 'number') githubAppId = String(rawAppId);
  else if (rawAppId !== undefined && rawAppId !== null) githubAppId = r.string('github_app_id');
  const rawInstallation = input.github_app_installation_id;
  let installationId: number | undefined;
  if (typeof rawInstallation === 'number' && Number.isInteger(rawInstallation))
    installationId = rawInstallation;
  else if (typeof rawInstallation === 'string' && /^\d+$/.test(rawInstallation))
    installationId = Number(rawInstallation);
  else if (rawInstallation !== undefined && rawInstallation !== null) {
    r.problem('github_app_installation_id', 'must be an integer');
  }
  const privateKey = r.string('github_app_private_key');
  const vaultType = r.string('vault_type');
  r.string('vault_lookup_key');
  const namespace = r.string('ephemeral_runner_set_namespace', true) ?? '';
  const name = r.string('ephemeral_runner_set_name', true) ?? '';
  const maxRunners = r.int('max_runners', 0);
  const minRunners = r.int('min_runners', 0);
  const scaleSetId = r.int('runner_scale_set_id', 1, 'is required (a positive scale set id)');
  const scaleSetName = r.string('runner_scale_set_name') ?? '';
  const serverRootCa = r.string('server_root_ca');
  const logLevel = r.oneOf('log_level', ['debug', 'info', 'warn', 'error'] as const, 'info');
  const logFormat = r.oneOf('log_format', ['json', 'text'] as const, 'json');
  const metricsAddr = r.string('metrics_addr');
  const metricsEndpoint = r.string('metrics_endpoint');
  const metrics = readMetrics(r);
  const warmHeadroom = readWarmHeadroom(r);
  const proxyObject = r.object('proxy');
  const proxy = proxyObject
    ? {
        http: typeof proxyObject.http === 'string' ? proxyObject.http : undefined,
        https: typeof proxyObject.https === 'string' ? proxyObject.https : undefined,
        no_proxy: r.stringList('proxy.no_proxy', proxyObject.no_proxy),
      }
    : undefined;

  if (minRunners > maxRunners) {
    r.problem('min_runners', `${minRunners} cannot be greater than max_runners ${maxRunners}`);
  }
  if (configureUrl) {
    try {
      parseGitHubConfigUrl(configureUrl);
    } catch (err) {
      r.problem('configure_url', (err as Error).message);
    }
  }
  if (vaultType) {
    // Credentials from a vault are resolved by whoever writes this file; the listener reads only
    // what the file holds, so a vault reference here would leave it without credentials.
    r.problem(
      'vault_type',
      `${JSON.stringify(vaultType)} is not supported by the ARO listener: resolve the credentials into github_token or the github_app_* fields`,
    );
  } else {
    const hasToken = !!githubToken;
    const appCount = [githubAppId, installationId, privateKey].filter(
      (v) => v !== undefined && v !== '' && v !== 0,
    ).length;
    if (hasToken && appCount > 0) {
      r.problem('github_token', 'set either github_token or the github_app_* fields, not both');
    } else if (!hasToken && appCount === 0) {
      r.problem(
        'github_token',
        'is required (or github_app_id, github_app_installation_id and github_app_private_key)',
      );
    } else if (!hasToken && appCount < 3) {
      r.problem(
        'github_app_id',
        'a GitHub App needs github_app_id, github_app_installation_id and github_app_private_key',
      );
    }
  }
  return {
    problems: r.problems,
    data: {
      configure_url: configureUrl,
      github_token: githubToken,
      github_app_id: githubAppId,
      github_app_installation_id: installationId,
      github_app_private_key: privateKey,
      ephemeral_runner_set_namespace: namespace,
      ephemeral_runner_set_name: name,
      max_runners: maxRunners,
      min_runners: minRunners,
      runner_scale_set_id: scaleSetId,
      runner_scale_set_name: scaleSetName,
      server_root_ca: serverRootCa,
      log_level: logLevel,
      log_format: logFormat,
      metrics_addr: metricsAddr,
      metrics_endpoint: metricsEndpoint,
      metrics,
      proxy,
      warmHeadroom,
    },
  };
}

/** Where to serve metrics and probes; undefined when `metrics_addr` is empty or `0` (disabled). */
export interface ServeAddress {
  host: string;
  port: number;
}

/** The listener's configuration once read and checked: what the process runs with. */
export interface LoadedListenerConfig {
  raw: ListenerConfig;
  configUrl: string;
  credentials: GitHubCredentials;
  proxy?: ProxySettings;
  rootCAs: string[];
  ephemeralRunnerSetNamespace: string;
  ephemeralRunnerSetName: string;
  scaleSetId: number;
  scaleSetName: string;
  minRunners: number;
  maxRunners: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  logFormat: 'json' | 'text';
  serve?: ServeAddress;
  metricsEndpoint: string;
  metrics?: ListenerConfig['metrics'];
  /** Warm headroom above minRunners (ARO, opt-in); undefined: none, upstream's count. */
  warmHeadroom?: WarmHeadroomSettings;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `:8080`, `0.0.0.0:8080`, `[::]:8080`, `127.0.0.1:0`; empty or `0` disables the server. */
export function parseServeAddress(addr: string | undefined): ServeAddress | undefined {
  const value = (addr ?? ListenerDefaults.metricsAddr).trim();
  if (value === '' || value === '0') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new ConfigError(
      `invalid listener configuration:\n  metrics_addr: ${JSON.stringify(value)} is not [host]:port`,
    );
  }
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Checks a parsed config.json; throws a ConfigError naming every invalid field. */
export function validateListenerConfig(input: unknown): LoadedListenerConfig {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ConfigError('invalid listener configuration:\n  (config): must be a JSON object');
  }
  const parsed = readListenerConfig(input as Json);
  if (parsed.problems.length > 0) {
    throw new ConfigError(`invalid listener configuration:\n${parsed.problems.join('\n')}`);
  }
  const c = parsed.data;
  const credentials: GitHubCredentials = c.github_token
    ? { kind: 'pat', token: c.github_token }
    : {
        kind: 'app',
        appId: c.github_app_id ?? '',
        installationId: c.github_app_installation_id ?? 0,
        privateKey: c.github_app_private_key ?? '',
      };
  try {
    validateCredentials(credentials);
    // A key that does not parse is a bad config, not a failure to reach GitHub: refuse it at start.
    if (credentials.kind === 'app') createAppJwt(credentials.appId, credentials.privateKey);
  } catch (err) {
    const field = credentials.kind === 'pat' ? 'github_token' : 'github_app_private_key';
    throw new ConfigError(`invalid listener configuration:\n  ${field}: ${(err as Error).message}`);
  }
  const endpoint = c.metrics_endpoint || ListenerDefaults.metricsEndpoint;
  if (!endpoint.startsWith('/')) {
    throw new ConfigError(
      `invalid listener configuration:\n  metrics_endpoint: ${JSON.stringify(endpoint)} must start with /`,
    );
  }
  const proxy =
    c.proxy && (c.proxy.http || c.proxy.https)
      ? { http: c.proxy.http || undefined, https: c.proxy.https || undefined, noProxy: c.proxy.no_proxy }
      : undefined;
  return {
    raw: input as ListenerConfig,
    configUrl: c.configure_url,
    credentials,
    proxy,
    rootCAs: c.server_root_ca?.trim() ? [c.server_root_ca] : [],
    ephemeralRunnerSetNamespace: c.ephemeral_runner_set_namespace,
    ephemeralRunnerSetName: c.ephemeral_runner_set_name,
    scaleSetId: c.runner_scale_set_id,
    scaleSetName: c.runner_scale_set_name || c.ephemeral_runner_set_name,
    minRunners: c.min_runners,
    maxRunners: c.max_runners,
    logLevel: c.log_level,
    logFormat: c.log_format,
    serve: parseServeAddress(c.metrics_addr),
    metricsEndpoint: endpoint,
    metrics: c.metrics,
    warmHeadroom: c.warmHeadroom,
  };
}

/** Reads and checks the file named by LISTENER_CONFIG_PATH (default: where the config secret is mounted). */
export function loadListenerConfig(env: NodeJS.ProcessEnv = process.env): LoadedListenerConfig {
  return readListenerConfigFile(env.LISTENER_CONFIG_PATH || ListenerDefaults.configPath);
}

/** Reads and checks one config.json; a ConfigError names the file or the field. */
export function readListenerConfigFile(path: string): LoadedListenerConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read the listener configuration ${path}: ${(err as Error).message}`);
  }
  return parseListenerConfigText(text, path);
}

/** Checks the text of one config.json read from `source` (a file, a Secret's key); a ConfigError names it or the field. */
export function parseListenerConfigText(text: string, source: string): LoadedListenerConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`the listener configuration ${source} is not JSON: ${(err as Error).message}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`the listener configuration ${source} must hold a JSON object`);
  }
  return validateListenerConfig(json);
}
