import * as http from 'node:http';
import * as https from 'node:https';
import { BlockList, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { TunnelAgent } from './tunnel-agent';

/** A scale set's proxy: URLs may carry `user:pass@`, which is sent as Proxy-Authorization (Basic). */
export interface ProxySettings {
  http?: string;
  https?: string;
  /** Hosts that bypass the proxy: `host`, `host:port`, `.domain` (subdomains only), `*` (all), an IP or a CIDR. */
  noProxy?: string[];
}

/** Picks the connection pool (a keep-alive agent of Node's `http`) for each request URL, and owns its sockets. */
export interface Dispatchers {
  forUrl(url: URL): http.Agent;
  /**
   * Whether a request to `url` goes through the configured proxy, so that a failure to connect is the
   * proxy's (the client never connects to the target itself). False where the environment chooses.
   */
  viaProxy(url: URL): boolean;
  /** Bounds connecting (TCP, and TLS for https) to a target, see the transport's connect timeout. */
  readonly connectTimeoutMs: number;
  /** Destroys every pooled socket; the transport waits for requests in flight first. */
  close(): void;
}

export interface DispatcherOptions {
  /** A proxy configured for this client. Without it, HTTP(S)_PROXY / NO_PROXY from the environment apply. */
  proxy?: ProxySettings;
  /** Extra PEM root certificates, trusted in addition to Node's bundled roots. */
  rootCAs?: string[];
  /** Bounds connecting (TCP and TLS) to a target. Default 10 s. */
  connectTimeoutMs?: number;
  /** Bounds a proxy's answer to CONNECT (connecting to the proxy included). Default 30 s. */
  tunnelTimeoutMs?: number;
}

/**
 * An idle pooled connection is closed after this long, unless the server's `Keep-Alive: timeout=`
 * asks for less (Node's agent honours that hint, less a second): a server that closes an idle
 * connection as the client reuses it fails a call that must not be repeated.
 */
const idleSocketMs = 4000;

const defaultPorts: Record<string, number> = { 'http:': 80, 'https:': 443 };

function tlsOptions(rootCAs: string[] | undefined): { ca?: string[] } {
  // Giving Node a `ca` replaces its bundled roots, so they are passed along with the extra ones: a
  // GHES behind a private CA must not cost the ability to reach github.com.
  return rootCAs && rootCAs.length > 0 ? { ca: [...rootCertificates, ...rootCAs] } : {};
}

export function createDispatchers(opts: DispatcherOptions = {}): Dispatchers {
  const tls = tlsOptions(opts.rootCAs);
  const tunnelTimeoutMs = opts.tunnelTimeoutMs ?? 30_000;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const agentOptions = { keepAlive: true, timeout: idleSocketMs };
  const directHttp = new http.Agent(agentOptions);
  const directHttps = new https.Agent({ ...agentOptions, ...tls });
  const direct = (url: URL): http.Agent => (url.protocol === 'https:' ? directHttps : directHttp);
  // Both schemes are tunnelled with CONNECT, plain http included, as undici's ProxyAgent did: proxies
  // that allow only CONNECT (to 443 or not) and ones that forward absolute URIs both carry it.
  const tunnel = (uri: string | undefined): TunnelAgent | undefined =>
    uri
      ? new (tunnelAgentClass())(normaliseProxyUrl(uri), { ...agentOptions, ...tls, tunnelTimeoutMs })
      : undefined;
  const agents: Array<http.Agent | undefined> = [directHttp, directHttps];
  const closeAll = () => {
    for (const a of agents) a?.destroy();
  };

  if (!opts.proxy) {
    const env = envProxies();
    const httpProxy = tunnel(env.http);
    const httpsProxy = env.https === env.http ? httpProxy : tunnel(env.https);
    agents.push(httpProxy, httpsProxy);
    return {
      forUrl(url: URL): http.Agent {
        if (!envProxied(url)) return direct(url);
        return (url.protocol === 'https:' ? httpsProxy : httpProxy) ?? direct(url);
      },
      viaProxy: () => false,
      connectTimeoutMs,
      close: closeAll,
    };
  }

  const httpProxy = tunnel(opts.proxy.http);
  const httpsProxy = tunnel(opts.proxy.https);
  agents.push(httpProxy, httpsProxy);
  const bypass = noProxyMatcher(opts.proxy.noProxy ?? []);
  const proxyFor = (url: URL) => (url.protocol === 'https:' ? httpsProxy : httpProxy);
  return {
    // As Go's httpproxy (which ARC uses for a scale set's proxy): each scheme uses only its own
    // proxy, so a proxy set for http alone leaves https direct.
    forUrl(url: URL): http.Agent {
      const viaProxy = proxyFor(url);
      return !viaProxy || bypass(url) ? direct(url) : viaProxy;
    },
    viaProxy: (url: URL) => !!proxyFor(url) && !bypass(url),
    connectTimeoutMs,
    close: closeAll,
  };
}

/** Loaded on first use: most installs have no proxy, and https-proxy-agent brings debug along. */
function tunnelAgentClass(): typeof TunnelAgent {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a lazy load, typed by the import above
  return (require('./tunnel-agent') as typeof import('./tunnel-agent')).TunnelAgent;
}

/**
 * The proxies of the environment, as undici's EnvHttpProxyAgent read them (which this client used
 * before, and which is kept): read once, when the client is made; the lower-case name wins over the
 * upper-case one when both are set (an empty value counts as set, and means no proxy); https traffic
 * falls back to the http proxy when no https proxy is set (unlike a scale set's proxy, above).
 */
function envProxies(): { http?: string; https?: string } {
  const env = process.env;
  const httpProxy = (env.http_proxy ?? env.HTTP_PROXY) || undefined;
  const httpsProxy = (env.https_proxy ?? env.HTTPS_PROXY) || httpProxy;
  return { http: httpProxy, https: httpsProxy };
}

/**
 * Whether the environment's NO_PROXY lets a request to `url` use the environment's proxy, by
 * EnvHttpProxyAgent's rules: `no_proxy` wins over `NO_PROXY` and is read again at every request;
 * entries are split on commas and spaces; the whole value `*` means no proxy at all; an entry
 * `host`, `.host` or `*.host` matches that host and its subdomains, on any port unless it says
 * `host:port`. No CIDRs (a scale set's noProxy has them, see noProxyMatcher).
 */
function envProxied(url: URL): boolean {
  const value = process.env.no_proxy ?? process.env.NO_PROXY ?? '';
  if (value === '*') return false;
  // `host` keeps an IPv6 address's brackets, as undici compared them.
  const host = url.host.replace(/:\d*$/, '').toLowerCase();
  const port = Number.parseInt(url.port, 10) || defaultPorts[url.protocol] || 0;
  for (const entry of value.split(/[,\s]/)) {
    if (!entry) continue;
    const withPort = /^(.+):(\d+)$/.exec(entry);
    const name = (withPort ? withPort[1] : entry).replace(/^\*?\./, '').toLowerCase();
    if (withPort && Number(withPort[2]) !== port) continue;
    if (host === name || host.endsWith(`.${name}`)) return false;
  }
  return true;
}

/** `proxy.corp:3128` means `http://proxy.corp:3128`, as in curl and Go. */
export function normaliseProxyUrl(uri: string): string {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(uri) ? uri : `http://${uri}`;
  try {
    new URL(withScheme);
  } catch {
    // The proxy URL may hold a password, so it is not echoed.
    throw new Error('proxy URL is not a valid URL');
  }
  return withScheme;
}

/** Whether a request to `url` bypasses the proxy, by the NO_PROXY rules documented on ProxySettings. */
export function noProxyMatcher(entries: string[]): (url: URL) => boolean {
  const all = entries.flatMap((e) => e.split(/[,\s]+/)).filter((e) => e !== '');
  if (all.includes('*')) return () => true;
  const cidrs = new BlockList();
  let hasCidr = false;
  const hosts: Array<{ name: string; port: number; subdomainsOnly: boolean }> = [];
  for (const raw of all) {
    const entry = raw.toLowerCase();
    const cidr = /^(.+)\/(\d{1,3})$/.exec(entry);
    if (cidr && isIP(cidr[1])) {
      cidrs.addSubnet(cidr[1], Number(cidr[2]), isIP(cidr[1]) === 6 ? 'ipv6' : 'ipv4');
      hasCidr = true;
      continue;
    }
    const withPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    const hostPart = (withPort ? withPort[1] : entry).replace(/^\[|\]$/g, '');
    const port = withPort ? Number(withPort[2]) : 0;
    const subdomainsOnly = hostPart.startsWith('.') || hostPart.startsWith('*.');
    hosts.push({ name: hostPart.replace(/^\*?\./, ''), port, subdomainsOnly });
  }
  return (url: URL) => {
    const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, '');
    const port = Number(url.port) || defaultPorts[url.protocol] || 0;
    const ipFamily = isIP(host);
    if (hasCidr && ipFamily !== 0 && cidrs.check(host, ipFamily === 6 ? 'ipv6' : 'ipv4')) return true;
    return hosts.some((h) => {
      if (h.port && h.port !== port) return false;
      if (host.endsWith(`.${h.name}`)) return true;
      return !h.subdomainsOnly && host === h.name;
    });
  };
}
