import { DEFAULT_UPSTREAM_COMPATIBILITY, UPSTREAM_COMPATIBILITY_VERSIONS } from '@aro/api';
import { parseLogLevel } from '@aro/observability';
import { z } from 'zod';

const seconds = (fallback: number) => z.coerce.number().finite().default(fallback);
/** A comma-separated list: blanks around names and empty entries dropped, so `a, b,` is `[a, b]`. */
const commaList = () =>
  z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    );
const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');

/**
 * A duration as Go and Helm users write it (`90s`, `10m`, `1h30m`) or a bare number of seconds, in
 * milliseconds; anything else is refused with the forms it accepts.
 */
export function parseDurationMs(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const unitMs: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1 };
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed) return undefined;
  return parts.reduce((sum, [, n, unit]) => sum + Number(n) * unitMs[unit], 0);
}

const duration = (fallback: string, minMs: number) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDurationMs(text);
      if (ms === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `"${text}" is not a duration (e.g. 90s, 10m, 1h30m, or seconds)`,
        });
        return z.NEVER;
      }
      if (ms < minMs) {
        ctx.addIssue({ code: 'custom', message: `must be at least ${minMs / 1000}s` });
        return z.NEVER;
      }
      return ms;
    });

/**
 * Every option of the controller, read from the environment and validated once at start. A bad value
 * stops the process with a message naming the variable, instead of surfacing later as odd behaviour.
 * `.env.example` lists them all with their defaults.
 */
export const controllerEnvSchema = z
  .object({
    /** Path to a kubeconfig; in-cluster configuration or ~/.kube/config when unset. */
    KUBECONFIG: z.string().optional(),
    /** Namespace whose runners this controller manages; empty for all namespaces. */
    WATCH_NAMESPACE: z.string().default(''),
    MAX_CONCURRENT_RECONCILES: positiveInt(2),
    UNREGISTRATION_WORKERS: positiveInt(4),
    /** Grace period for deleting runner pods whose containers have all exited; negative keeps the pod's own. */
    TERMINATED_POD_GRACE_PERIOD_SECONDS: z.coerce.number().int().default(0),
    /** Pod failures after which an EphemeralRunner is recreated (upstream: 5). */
    MAX_POD_FAILURES: z.coerce.number().int().nonnegative().default(5),
    FAILURE_BACKOFF_BASE_SECONDS: seconds(5).refine((v) => v > 0, 'must be > 0'),
    ORPHAN_SWEEP_INTERVAL_SECONDS: seconds(600).refine((v) => v > 0, 'must be > 0'),
    ORPHAN_GRACE_SECONDS: seconds(120).refine((v) => v >= 0, 'must be >= 0'),
    LEADER_ELECTION: bool(true),
    LEADER_ELECTION_ID: z.string().min(1).default('aro-controller'),
    /** Namespace of the Lease; defaults to POD_NAMESPACE, then `default`. */
    LEADER_ELECTION_NAMESPACE: z.string().optional(),
    LEASE_DURATION_SECONDS: seconds(15).refine((v) => v > 0, 'must be > 0'),
    RENEW_DEADLINE_SECONDS: seconds(10).refine((v) => v > 0, 'must be > 0'),
    RETRY_PERIOD_SECONDS: seconds(2).refine((v) => v > 0, 'must be > 0'),
    /**
     * all: every transition and failure; failures: only what a user must act on; none. failures by
     * default: the three transition Events of every successful runner would take it past its budget
     * of 10 API writes (docs/performance.md), and the status already records each transition.
     */
    EVENTS: z.enum(['all', 'failures', 'none']).default('failures'),
    /**
     * debug, info, warn, error, or a zap level number as upstream's --log-level accepts it (-1 debug,
     * 0 info, 1 warn, 2 error, 3 and above nothing); read as the level name it means.
     */
    LOG_LEVEL: z
      .string()
      .default('info')
      .transform((v, ctx) => {
        const level = parseLogLevel(v);
        if (level === undefined) {
          ctx.addIssue({
            code: 'custom',
            message: `"${v}" is not a log level: use debug, info, warn, error, or a zap level number (-1 debug .. 2 error)`,
          });
          return z.NEVER;
        }
        return level;
      }),
    LOG_FORMAT: z.enum(['json', 'text']).default('json'),
    /** /healthz, /readyz and /metrics are served here, on every replica. */
    PROBE_PORT: z.coerce.number().int().min(0).max(65535).default(8081),
    PROBE_BIND_ADDRESS: z.string().default('0.0.0.0'),
    /**
     * The read-only fleet page (/fleet, /fleet.json) on the probe port, every replica. Off by default:
     * it adds a watch on Events and shows runner and job counts to whoever reaches the port.
     */
    FLEET_PAGE: bool(false),
    SHUTDOWN_TIMEOUT_SECONDS: seconds(30).refine((v) => v > 0, 'must be > 0'),
    POD_NAME: z.string().optional(),
    POD_NAMESPACE: z.string().optional(),
    /**
     * Extension modules to load, comma-separated: package names, or paths (relative to the working
     * directory) of files that export a Nest module. See docs/extending.md.
     */
    ARO_EXTENSIONS: commaList(),
    /** Image of the listener pods (upstream's name for the controller's own image, which runs them). */
    CONTROLLER_MANAGER_CONTAINER_IMAGE: z.string().default(''),
    /**
     * Comma-separated names of image pull secrets the listener pods get (upstream's
     * `--auto-scaler-image-pull-secrets`; the chart passes its `imagePullSecrets`). Each must exist in
     * the controller's namespace, where the listener pods run.
     */
    LISTENER_IMAGE_PULL_SECRETS: commaList(),
    /** Where listeners serve their metrics; `0` or empty disables them. */
    LISTENER_METRICS_ADDR: z.string().default(':8080'),
    LISTENER_METRICS_ENDPOINT: z.string().default('/metrics'),
    /**
     * How often a listener's config is rebuilt from its GitHub credentials Secret even when nothing
     * else changed, so that a rotated token or key reaches the listener on its own; each rebuild is one
     * Secret read per scale set.
     */
    LISTENER_CREDENTIAL_REFRESH_SECONDS: seconds(60).refine((v) => v >= 5, 'must be >= 5'),
    /**
     * `pod` (upstream's layout): a listener pod per scale set. `shared`: the chart's shared listener
     * Deployment serves every scale set; each listener's config goes into LISTENER_SHARED_CONFIG_SECRET
     * and its Role is bound to LISTENER_SHARED_SERVICE_ACCOUNT (both in the controller's namespace).
     */
    LISTENER_MODE: z.enum(['pod', 'shared']).default('pod'),
    LISTENER_SHARED_SERVICE_ACCOUNT: z.string().default(''),
    LISTENER_SHARED_CONFIG_SECRET: z.string().default(''),
    /**
     * How long a runner pod may stay short of Running before its runner is marked Failed with the
     * kubelet's reason (image pull failures, unschedulable, a node that never reports), so that it
     * frees its slot. Long enough for a node to be provisioned and a large image pulled; a waiting
     * reason the kubelet never recovers from (InvalidImageName, ErrImageNeverPull) ends it sooner.
     * In milliseconds once parsed.
     */
    RUNNER_START_TIMEOUT: duration('10m', 10_000),
    /**
     * Pods of runners executing a job refuse voluntary eviction (a PodDisruptionBudget over a busy
     * label, and the Cluster Autoscaler and Karpenter annotations); idle runners' pods do not.
     */
    BUSY_RUNNER_EVICTION_PROTECTION: bool(true),
    /**
     * Port of the admission webhook on `pods/eviction` (HTTPS, every replica): an idle runner's
     * registration is removed before its pod is evicted, and a runner the service says holds a job
     * keeps its pod. `0` (the default outside the chart) serves none.
     */
    EVICTION_WEBHOOK_PORT: z.coerce.number().int().min(0).max(65535).default(0),
    EVICTION_WEBHOOK_BIND_ADDRESS: z.string().default('0.0.0.0'),
    /**
     * Folder of the webhook's serving certificate, `tls.crt` and `tls.key` (controller-runtime's
     * default), read when EVICTION_WEBHOOK_CERT_SECRET is empty: a certificate someone else makes.
     */
    EVICTION_WEBHOOK_CERT_DIR: z.string().default('/tmp/k8s-webhook-server/serving-certs'),
    /**
     * The chart's way: the controller makes the webhook's CA and serving certificate, keeps them in this
     * Secret of its namespace, renews them, and sets the CA in EVICTION_WEBHOOK_CONFIGURATION's caBundle;
     * the certificate names EVICTION_WEBHOOK_SERVICE.
     */
    EVICTION_WEBHOOK_CERT_SECRET: z.string().default(''),
    EVICTION_WEBHOOK_SERVICE: z.string().default(''),
    EVICTION_WEBHOOK_CONFIGURATION: z.string().default(''),
    /** Life of the serving certificate the controller makes; renewed when a third of it is left. */
    EVICTION_WEBHOOK_CERT_VALIDITY_DAYS: z.coerce.number().int().min(3).default(365),
    /**
     * The webhook's `timeoutSeconds`: a review gives up 2 s sooner and refuses (429, which drains
     * retry) rather than let the API server time out, which failurePolicy Ignore would allow unreviewed.
     */
    EVICTION_WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().int().min(3).max(30).default(10),
    /** Comma-separated label key prefixes not copied from scale sets onto the objects made for them. */
    EXCLUDE_LABEL_PROPAGATION_PREFIXES: z
      .string()
      .default('')
      .transform((v) =>
        v
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== ''),
      ),
    /** How a runner template change reaches a busy scale set: eventual drains it first, immediate does not. */
    UPDATE_STRATEGY: z.enum(['immediate', 'eventual']).default('eventual'),
    /**
     * The upstream controller version ARO stays able to hand back to (docs/migrating.md): the
     * EphemeralRunnerSet finalizer it writes is the one that version removes (0.14.2 and main named it
     * differently). Sets carrying another version's name get this one in its place.
     */
    UPSTREAM_COMPATIBILITY: z.enum(UPSTREAM_COMPATIBILITY_VERSIONS).default(DEFAULT_UPSTREAM_COMPATIBILITY),
    /**
     * Scale sets with `vaultConfig.type: azure_key_vault`: the Entra ID authority (Azure's own variable
     * name; a sovereign cloud's, or the public cloud when empty), whether to skip its instance
     * discovery, whether to accept a bearer challenge naming another resource than the vault's domain
     * (a private endpoint under another name), and a PEM file of CAs trusted beside the system roots.
     */
    AZURE_AUTHORITY_HOST: z.string().default(''),
    AZURE_KEY_VAULT_DISABLE_INSTANCE_DISCOVERY: bool(false),
    AZURE_KEY_VAULT_DISABLE_CHALLENGE_RESOURCE_VERIFICATION: bool(false),
    AZURE_KEY_VAULT_CA_FILE: z.string().default(''),
  })
  .superRefine((env, ctx) => {
    for (const name of ['EVICTION_WEBHOOK_SERVICE', 'EVICTION_WEBHOOK_CONFIGURATION'] as const) {
      if (env.EVICTION_WEBHOOK_CERT_SECRET !== '' && env[name] === '') {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'is required with EVICTION_WEBHOOK_CERT_SECRET',
        });
      }
    }
    for (const name of ['LISTENER_SHARED_SERVICE_ACCOUNT', 'LISTENER_SHARED_CONFIG_SECRET'] as const) {
      if (env.LISTENER_MODE === 'shared' && env[name] === '') {
        ctx.addIssue({ code: 'custom', path: [name], message: 'is required when LISTENER_MODE is shared' });
      }
    }
    if (env.RENEW_DEADLINE_SECONDS >= env.LEASE_DURATION_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['RENEW_DEADLINE_SECONDS'],
        message: 'must be shorter than LEASE_DURATION_SECONDS',
      });
    }
    if (env.RETRY_PERIOD_SECONDS >= env.RENEW_DEADLINE_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['RETRY_PERIOD_SECONDS'],
        message: 'must be shorter than RENEW_DEADLINE_SECONDS',
      });
    }
  });

export type ControllerConfig = z.infer<typeof controllerEnvSchema>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses the environment; throws a ConfigError listing every invalid variable. */
export function loadControllerConfig(env: NodeJS.ProcessEnv = process.env): ControllerConfig {
  const parsed = controllerEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`)
      .join('\n');
    throw new ConfigError(`invalid controller configuration:\n${problems}`);
  }
  return parsed.data;
}
