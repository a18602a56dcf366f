import { existsSync, readFileSync } from 'node:fs';
import type * as https from 'node:https';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';

/*
 * The kubeconfig, without @kubernetes/client-node at run time.
 *
 * client-node's KubeConfig pulls in the whole generated API (every model and client) and holds
 * ~30 MiB of RSS in a process that uses none of it: ARO's own REST client does the talking. What a
 * controller needs from a kubeconfig is small: a server, its CA, and credentials applied to each
 * request. That is read here for the common cases: in-cluster (the chart's deployment), and a
 * kubeconfig file in JSON (what `kubectl config view --raw -o json` and client-node's exportConfig
 * write) with a token, a token file, a client certificate or basic credentials. A YAML file, an exec
 * plugin, an auth provider or a proxy still work, through client-node loaded at that moment only.
 *
 * client-node's own KubeConfig satisfies KubeConfigSource, so tests and tools keep handing it in.
 */

export interface KubeCluster {
  readonly name: string;
  readonly server: string;
  readonly caData?: string;
  readonly caFile?: string;
  readonly tlsServerName?: string;
  readonly skipTLSVerify: boolean;
  readonly proxyUrl?: string;
}

export interface KubeUser {
  readonly name: string;
  readonly token?: string;
  readonly certData?: string;
  readonly certFile?: string;
  readonly keyData?: string;
  readonly keyFile?: string;
  readonly username?: string;
  readonly password?: string;
  readonly impersonateUser?: string;
}

export interface KubeContext {
  readonly name: string;
  readonly cluster: string;
  readonly user: string;
  readonly namespace?: string;
}

/** What the REST client reads from a kubeconfig: client-node's KubeConfig has the same shape. */
export interface KubeConfigSource {
  getCurrentContext(): string;
  getContexts(): KubeContext[];
  getContextObject(name: string): KubeContext | null;
  getCurrentCluster(): KubeCluster | null;
  getCurrentUser(): KubeUser | null;
  /** Sets the TLS material and the credentials of the current user on one request's options. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** client-go reads a rotated service account token again after a minute; so does client-node. */
const TOKEN_FILE_TTL_MS = 60_000;

interface LeanUser extends KubeUser {
  readonly tokenFile?: string;
}

/** A kubeconfig read without client-node: see the file comment for what it covers. */
export class LeanKubeConfig implements KubeConfigSource {
  private tokenFromFile?: { value: string; readAt: number };

  constructor(
    private readonly clusters: KubeCluster[],
    private readonly users: LeanUser[],
    private readonly contexts: KubeContext[],
    private readonly currentContext: string,
  ) {}

  getCurrentContext(): string {
    return this.currentContext;
  }

  getContexts(): KubeContext[] {
    return this.contexts;
  }

  getContextObject(name: string): KubeContext | null {
    return this.contexts.find((c) => c.name === name) ?? null;
  }

  getCurrentCluster(): KubeCluster | null {
    const context = this.getContextObject(this.currentContext);
    return this.clusters.find((c) => c.name === context?.cluster) ?? null;
  }

  getCurrentUser(): KubeUser | null {
    return this.currentUser() ?? null;
  }

  private currentUser(): LeanUser | undefined {
    const context = this.getContextObject(this.currentContext);
    return this.users.find((u) => u.name === context?.user);
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.currentUser();
    if (cluster) {
      const ca = material(cluster.caData, cluster.caFile);
      if (ca) opts.ca = ca;
      if (cluster.skipTLSVerify) opts.rejectUnauthorized = false;
      if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
    }
    if (!user) return;
    const cert = material(user.certData, user.certFile);
    const key = material(user.keyData, user.keyFile);
    if (cert) opts.cert = cert;
    if (key) opts.key = key;
    const headers: Record<string, string> = { ...(opts.headers as Record<string, string> | undefined) };
    const token = user.token ?? (user.tokenFile ? this.readToken(user.tokenFile) : undefined);
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (user.username !== undefined && user.password !== undefined) {
      headers.Authorization = `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}`;
    }
    if (user.impersonateUser) headers['Impersonate-User'] = user.impersonateUser;
    opts.headers = headers;
  }

  /** A projected service account token is rotated on disk: read again once a minute. */
  private readToken(path: string): string {
    const now = Date.now();
    if (!this.tokenFromFile || now - this.tokenFromFile.readAt > TOKEN_FILE_TTL_MS) {
      this.tokenFromFile = { value: readFileSync(path, 'utf8').trim(), readAt: now };
    }
    return this.tokenFromFile.value;
  }
}

function material(data: string | undefined, file: string | undefined): Buffer | undefined {
  if (data) return Buffer.from(data, 'base64');
  if (file) return readFileSync(file);
  return undefined;
}

/** The in-cluster configuration: the service account's token and CA, the service's address. */
export function inClusterKubeConfig(env: NodeJS.ProcessEnv = process.env): LeanKubeConfig | undefined {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  const tokenFile = join(SERVICE_ACCOUNT_DIR, 'token');
  if (!host || !port || !existsSync(tokenFile)) return undefined;
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return new LeanKubeConfig(
    [{ name: 'inCluster', server, caFile: join(SERVICE_ACCOUNT_DIR, 'ca.crt'), skipTLSVerify: false }],
    [{ name: 'inClusterUser', tokenFile }],
    [{ name: 'inClusterContext', cluster: 'inCluster', user: 'inClusterUser' }],
    'inClusterContext',
  );
}

type Raw = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const entries = (v: unknown): Raw[] => (Array.isArray(v) ? (v as Raw[]) : []);
const section = (v: Raw, key: string): Raw => (v[key] && typeof v[key] === 'object' ? (v[key] as Raw) : {});

/**
 * A kubeconfig file in JSON, or undefined when it is something only client-node reads: YAML, an exec
 * plugin or auth provider on the current user, a proxy on the current cluster.
 */
export function jsonKubeConfigFile(path: string): LeanKubeConfig | undefined {
  let raw: Raw;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8')) as Raw;
  } catch {
    return undefined;
  }
  if (!raw || typeof raw !== 'object') return undefined;
  const base = dirname(path);
  // Relative paths in a kubeconfig are relative to the file, as kubectl reads them.
  const file = (v: unknown): string | undefined => {
    const p = str(v);
    return p && !isAbsolute(p) ? join(base, p) : p;
  };
  const clusters: KubeCluster[] = entries(raw.clusters).map((entry) => {
    const c = section(entry, 'cluster');
    return {
      name: str(entry.name) ?? '',
      server: str(c.server) ?? '',
      caData: str(c['certificate-authority-data']),
      caFile: file(c['certificate-authority']),
      tlsServerName: str(c['tls-server-name']),
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      proxyUrl: str(c['proxy-url']),
    };
  });
  const needsClientNode = new Set<string>();
  const users: LeanUser[] = entries(raw.users).map((entry) => {
    const u = section(entry, 'user');
    const name = str(entry.name) ?? '';
    if (u.exec || u['auth-provider']) needsClientNode.add(name);
    return {
      name,
      token: str(u.token),
      tokenFile: file(u.tokenFile) ?? file(u['token-file']),
      certData: str(u['client-certificate-data']),
      certFile: file(u['client-certificate']),
      keyData: str(u['client-key-data']),
      keyFile: file(u['client-key']),
      username: str(u.username),
      password: str(u.password),
      impersonateUser: str(u.as),
    };
  });
  const contexts: KubeContext[] = entries(raw.contexts).map((entry) => {
    const c = section(entry, 'context');
    return {
      name: str(entry.name) ?? '',
      cluster: str(c.cluster) ?? '',
      user: str(c.user) ?? '',
      namespace: str(c.namespace),
    };
  });
  const config = new LeanKubeConfig(clusters, users, contexts, str(raw['current-context']) ?? '');
  const context = config.getContextObject(config.getCurrentContext());
  if (context && needsClientNode.has(context.user)) return undefined;
  if (config.getCurrentCluster()?.proxyUrl) return undefined;
  return config;
}

/**
 * The kubeconfig as client-node's loadFromDefault finds it (KUBECONFIG, then ~/.kube/config, then
 * in-cluster), or from `path`; read without client-node wherever LeanKubeConfig covers it.
 */
export async function loadKubeConfigSource(path?: string): Promise<KubeConfigSource> {
  const files = path ? [path] : (process.env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  const home = join(homedir(), '.kube', 'config');
  if (files.length === 1) {
    const lean = jsonKubeConfigFile(files[0]);
    if (lean) return lean;
  } else if (files.length === 0 && !existsSync(home)) {
    const lean = inClusterKubeConfig();
    if (lean) return lean;
  } else if (files.length === 0) {
    const lean = jsonKubeConfigFile(home);
    if (lean) return lean;
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}
