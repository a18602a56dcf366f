/**
 * The `githubConfigUrl` of a scale set names where runners register: an enterprise, an organization
 * or a repository, on github.com, a GHE.com tenant, or a GitHub Enterprise Server. The GitHub REST
 * API base is derived from it; the Actions service URL is not (runner-registration hands it out).
 */
export type GitHubScope = 'enterprise' | 'organization' | 'repository';

export interface GitHubConfig {
  configUrl: URL;
  scope: GitHubScope;
  enterprise: string;
  organization: string;
  repository: string;
  /** github.com-like hosting, where the REST API lives on `api.<host>` instead of `<host>/api/v3`. */
  isHosted: boolean;
  /** The GitHub REST API URL of `path` (which starts with `/`). */
  gitHubApiUrl(path: string): URL;
}

export class InvalidConfigUrlError extends Error {
  constructor(
    readonly configUrl: string,
    reason: string,
  ) {
    super(`${JSON.stringify(configUrl)}: invalid config URL, ${reason}`);
    this.name = 'InvalidConfigUrlError';
  }
}

/** Set to any value, it makes every host count as GHES, for testing hosted names against a local server. */
export const FORCE_GHES_ENV = 'GITHUB_ACTIONS_FORCE_GHES';

const hostedHosts = new Set(['github.com', 'www.github.com', 'github.localhost']);

function isHostedHost(hostname: string, env: NodeJS.ProcessEnv): boolean {
  if (env[FORCE_GHES_ENV] !== undefined) return false;
  const host = hostname.toLowerCase();
  return hostedHosts.has(host) || host.endsWith('.ghe.com');
}

function trimSlashes(s: string): string {
  return s.replace(/^\/+|\/+$/g, '');
}

export function parseGitHubConfigUrl(url: string, env: NodeJS.ProcessEnv = process.env): GitHubConfig {
  const trimmed = trimSlashes(url.trim());
  let configUrl: URL;
  try {
    configUrl = new URL(trimmed);
  } catch {
    throw new InvalidConfigUrlError(url, 'not an absolute URL');
  }
  if (configUrl.protocol !== 'https:' && configUrl.protocol !== 'http:') {
    throw new InvalidConfigUrlError(
      url,
      `unsupported scheme ${configUrl.protocol.replace(/:$/, '')}, use https or http`,
    );
  }

  const path = trimSlashes(configUrl.pathname);
  const segments = path === '' ? [] : path.split('/').map((s) => decodeURIComponent(s));
  let scope: GitHubScope;
  let enterprise = '';
  let organization = '';
  let repository = '';
  if (segments.length === 1 && segments[0] !== '') {
    scope = 'organization';
    organization = segments[0];
  } else if (segments.length === 2 && segments[0].toLowerCase() === 'enterprises' && segments[1] !== '') {
    scope = 'enterprise';
    enterprise = segments[1];
  } else if (segments.length === 2 && segments[0] !== '' && segments[1] !== '') {
    scope = 'repository';
    organization = segments[0];
    repository = segments[1];
  } else {
    throw new InvalidConfigUrlError(url, 'should point to an enterprise, org, or repository');
  }

  const isHosted = isHostedHost(configUrl.hostname, env);
  const apiBase = apiBaseOf(configUrl, isHosted);
  return {
    configUrl,
    scope,
    enterprise,
    organization,
    repository,
    isHosted,
    gitHubApiUrl(p: string): URL {
      const u = new URL(apiBase.href);
      u.pathname = (u.pathname.replace(/\/+$/, '') + '/' + p.replace(/^\/+/, '')).replace(/\/{2,}/g, '/');
      return u;
    },
  };
}

function apiBaseOf(configUrl: URL, isHosted: boolean): URL {
  const base = new URL(configUrl.origin);
  if (!isHosted) {
    base.pathname = '/api/v3';
    return base;
  }
  const host = configUrl.hostname.toLowerCase();
  if (host === 'github.com' || host === 'www.github.com') return new URL('https://api.github.com');
  // github.localhost and GHE.com tenants keep their scheme and port; only the api. prefix is added.
  base.hostname = `api.${host}`;
  return base;
}

/** The path of the registration-token endpoint for the config's scope. */
export function registrationTokenPath(config: GitHubConfig): string {
  const e = encodeURIComponent;
  switch (config.scope) {
    case 'enterprise':
      return `/enterprises/${e(config.enterprise)}/actions/runners/registration-token`;
    case 'organization':
      return `/orgs/${e(config.organization)}/actions/runners/registration-token`;
    case 'repository':
      return `/repos/${e(config.organization)}/${e(config.repository)}/actions/runners/registration-token`;
  }
}

/** The route label of the registration-token call, for metrics (never the owner's name). */
export function registrationTokenRoute(config: GitHubConfig): string {
  switch (config.scope) {
    case 'enterprise':
      return 'POST enterprises/{enterprise}/actions/runners/registration-token';
    case 'organization':
      return 'POST orgs/{org}/actions/runners/registration-token';
    case 'repository':
      return 'POST repos/{owner}/{repo}/actions/runners/registration-token';
  }
}
