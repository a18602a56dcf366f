import type { ProxySettings } from '@aro/actions';
import type { ProxyConfig } from '@aro/api';
import { SecretResolutionError } from './errors';

/** The keys of a proxy credential Secret (`proxy.http.credentialSecretRef`), as upstream names them. */
export const PROXY_USERNAME_KEY = 'username';
export const PROXY_PASSWORD_KEY = 'password';

export interface ProxyCredentials {
  username: string;
  password: string;
}

export type ProxyCredentialLookup = (secretName: string) => Promise<ProxyCredentials>;

/** Reads `username`/`password` from decoded Secret data; both are required. */
export function proxyCredentialsFromSecretData(
  data: Readonly<Record<string, string | undefined>>,
  where: { namespace: string; name: string; objectKind?: 'Secret' | 'vault secret' },
): ProxyCredentials {
  const read = (key: string): string => {
    const value = data[key];
    if (value === undefined || value === '') {
      throw new SecretResolutionError({
        reason: 'ProxyCredentialsMissing',
        namespace: where.namespace,
        secretName: where.name,
        objectKind: where.objectKind,
        key,
        detail: `missing; a proxy credential Secret needs both ${PROXY_USERNAME_KEY} and ${PROXY_PASSWORD_KEY}`,
      });
    }
    return value;
  };
  return { username: read(PROXY_USERNAME_KEY), password: read(PROXY_PASSWORD_KEY) };
}

/**
 * The proxy a holder's GitHub traffic goes through, with credentials from each server's
 * `credentialSecretRef` placed in the URL's userinfo (percent-encoded by the URL parser, so a password
 * with `@` or `:` survives). Undefined when nothing is configured, so callers can tell "no proxy"
 * from "a proxy with only noProxy".
 */
export async function resolveProxySettings(
  proxy: ProxyConfig | undefined,
  where: { namespace: string; holder: string },
  lookupCredentials: ProxyCredentialLookup,
): Promise<ProxySettings | undefined> {
  if (proxy === undefined) return undefined;
  const settings: ProxySettings = {};
  for (const scheme of ['http', 'https'] as const) {
    const server = proxy[scheme];
    if (server?.url === undefined || server.url === '') continue;
    const url = parseProxyUrl(server.url, `${where.holder} spec proxy.${scheme}.url`, where.namespace);
    if (server.credentialSecretRef !== undefined && server.credentialSecretRef !== '') {
      const credentials = await lookupCredentials(server.credentialSecretRef);
      url.username = credentials.username;
      url.password = credentials.password;
    }
    settings[scheme] = url.toString();
  }
  const noProxy = (proxy.noProxy ?? []).map((entry) => entry.trim()).filter((entry) => entry !== '');
  if (noProxy.length > 0) settings.noProxy = noProxy;
  return settings.http === undefined && settings.https === undefined && settings.noProxy === undefined
    ? undefined
    : settings;
}

/** `proxy.corp:3128` means `http://proxy.corp:3128`, as in Go's httpproxy, curl and `@aro/actions`. */
function parseProxyUrl(text: string, field: string, namespace: string): URL {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim()) ? text.trim() : `http://${text.trim()}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    // The URL is left out of the message: people put proxy passwords in it.
    throw new SecretResolutionError({
      reason: 'InvalidProxyUrl',
      namespace,
      detail: `${field} is not a URL`,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new SecretResolutionError({
      reason: 'InvalidProxyUrl',
      namespace,
      detail: `${field} must be an http:// or https:// URL, got scheme ${url.protocol}`,
    });
  }
  return url;
}
