import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ListenerDefaults, type ListenerConfig } from '@aro/api';
import {
  GitHubCredentials,
  ProxySettings,
  createAppJwt,
  parseGitHubConfigUrl,
  validateCredentials,
} from '@aro/actions';

/** The largest maxRunners upstream accepts (an AutoscalingRunnerSet without maxRunners gets this). */
const MAX_INT32 = 2 ** 31 - 1;

const labelList = z.object({ labels: z.array(z.string()) });

/**
 * The JSON the AutoscalingListener controller writes into the listener's config secret (upstream's
 * config.json names, see @aro/api ListenerConfig). Unknown keys are kept out of the way, not refused:
 * a newer controller may write a field this listener does not know yet.
 */
const listenerConfigSchema = z
  .object({
    configure_url: z.string().min(1, 'is required'),
    github_token: z.string().optional(),
    github_app_id: z.union([z.string(), z.number().transform(String)]).optional(),
    github_app_installation_id: z
      .union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)])
      .optional(),
    github_app_private_key: z.string().optional(),
    vault_type: z.string().optional(),
    vault_lookup_key: z.string().optional(),
    ephemeral_runner_set_namespace: z.string().min(1, 'is required'),
    ephemeral_runner_set_name: z.string().min(1, 'is required'),
    max_runners: z.number().int().min(0).max(MAX_INT32),
    min_runners: z.number().int().min(0).max(MAX_INT32),
    runner_scale_set_id: z.number().int().positive('is required (a positive scale set id)'),
    runner_scale_set_name: z.string().default(''),
    server_root_ca: z.string().optional(),
    log_level: z
      .string()
      .optional()
      .transform((v) => (v ? v.toLowerCase() : 'info'))
      .pipe(z.enum(['debug', 'info', 'warn', 'error'])),
    log_format: z
      .string()
      .optional()
      .transform((v) => (v ? v.toLowerCase() : 'json'))
      .pipe(z.enum(['json', 'text'])),
    metrics_addr: z.string().optional(),
    metrics_endpoint: z.string().optional(),
    metrics: z
      .object({
        counters: z.record(z.string(), labelList).optional(),
        gauges: z.record(z.string(), labelList).optional(),
        histograms: z
          .record(z.string(), labelList.extend({ buckets: z.array(z.number()).optional() }))
          .optional(),
      })
      .optional(),
    proxy: z
      .object({
        http: z.string().optional(),
        https: z.string().optional(),
        no_proxy: z.array(z.string()).optional(),
      })
      .optional(),
  })
  .superRefine((c, ctx) => {
    if (c.min_runners > c.max_runners) {
      ctx.addIssue({
        code: 'custom',
        path: ['min_runners'],
        message: `${c.min_runners} cannot be greater than max_runners ${c.max_runners}`,
      });
    }
    try {
      parseGitHubConfigUrl(c.configure_url);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['configure_url'], message: (err as Error).message });
    }
    if (c.vault_type) {
      // Credentials from a vault are resolved by whoever writes this file; the listener reads only
      // what the file holds, so a vault reference here would leave it without credentials.
      ctx.addIssue({
        code: 'custom',
        path: ['vault_type'],
        message: `${JSON.stringify(c.vault_type)} is not supported by the ARO listener: resolve the credentials into github_token or the github_app_* fields`,
      });
      return;
    }
    const hasToken = !!c.github_token;
    const appFields = [c.github_app_id, c.github_app_installation_id, c.github_app_private_key];
    const appCount = appFields.filter((v) => v !== undefined && v !== '' && v !== 0).length;
    if (hasToken && appCount > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['github_token'],
        message: 'set either github_token or the github_app_* fields, not both',
      });
    } else if (!hasToken && appCount === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['github_token'],
        message: 'is required (or github_app_id, github_app_installation_id and github_app_private_key)',
      });
    } else if (!hasToken && appCount < 3) {
      ctx.addIssue({
        code: 'custom',
        path: ['github_app_id'],
        message: 'a GitHub App needs github_app_id, github_app_installation_id and github_app_private_key',
      });
    }
  });

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
  const parsed = listenerConfigSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `  ${i.path.join('.') || '(config)'}: ${i.message}`)
      .join('\n');
    throw new ConfigError(`invalid listener configuration:\n${problems}`);
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
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`the listener configuration ${path} is not JSON: ${(err as Error).message}`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new ConfigError(`the listener configuration ${path} must hold a JSON object`);
  }
  return validateListenerConfig(json);
}
