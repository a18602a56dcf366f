import { BlockList, isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { Dispatcher } from 'undici';
import { Agent, EnvHttpProxyAgent, Pool, ProxyAgent } from './undici-parts';
import { ProxyTunnelError, proxyRefusedCode, proxyUnreachableCode } from './error-codes';

/** A scale set's proxy: URLs may carry `user:pass@`, which is sent as Proxy-Authorization (Basic). */
export interface ProxySettings {
  http?: string;
  https?: string;
  /** Hosts that bypass the proxy: `host`, `host:port`, `.domain` (subdomains only), `*` (all), an IP or a CIDR. */
  noProxy?: string[];
}

/** Picks the connection pool for each request URL, and owns the pools' sockets. */
export interface Dispatchers {
  forUrl(url: URL): Dispatcher;
  /**
   * Whether a request to `url` goes through the configured proxy, so that a failure to connect is the
   * proxy's (the client never connects to the target itself). False where the environment chooses.
   */
  viaProxy(url: URL): boolean;
  close(): Promise<void>;
}

export interface DispatcherOptions {
  /** A proxy configured for this client. Without it, HTTP(S)_PROXY / NO_PROXY from the environment apply. */
  proxy?: ProxySettings;
  /** Extra PEM root certificates, trusted in addition to Node's bundled roots. */
  rootCAs?: string[];
  connectTimeoutMs?: number;
  /** Bounds a proxy's answer to CONNECT. Default 30 s. */
  tunnelTimeoutMs?: number;
}

function tlsOptions(rootCAs: string[] | undefined): { ca?: string[] } {
  // Giving undici a `ca` replaces Node's defaults, so the bundled roots are passed along with the
  // extra ones: a GHES behind a private CA must not cost the ability to reach github.com.
  return rootCAs && rootCAs.length > 0 ? { ca: [...rootCertificates, ...rootCAs] } : {};
}

export function createDispatchers(opts: DispatcherOptions = {}): Dispatchers {
  const tls = tlsOptions(opts.rootCAs);
  const connectTimeout = opts.connectTimeoutMs ?? 10_000;
  const connect = { ...tls, timeout: connectTimeout };
  const tunnelTimeout = opts.tunnelTimeoutMs ?? 30_000;
  const proxyOptions = {
    connect,
    requestTls: { ...tls, timeout: connectTimeout },
    proxyTls: { ...tls, timeout: connectTimeout },
    // undici's client to the proxy has no timeout of its own on CONNECT: a proxy that accepts the
    // connection and never answers would hold the request (and close()) forever.
    clientFactory: (origin: URL, o: object) =>
      tunnelFailuresNamed(
        new Pool(origin, { ...o, headersTimeout: tunnelTimeout, bodyTimeout: tunnelTimeout }),
        origin,
      ),
  };

  if (!opts.proxy) {
    // EnvHttpProxyAgent reads HTTP_PROXY/HTTPS_PROXY/NO_PROXY itself, with undici's semantics
    // (HTTPS traffic falls back to HTTP_PROXY when HTTPS_PROXY is unset).
    const agent = new EnvHttpProxyAgent(proxyOptions);
    return {
      forUrl: () => agent,
      viaProxy: () => false,
      close: () => closeWithin(agent),
    };
  }

  const direct = new Agent({ connect });
  const proxyAgent = (uri: string | undefined): ProxyAgent | undefined =>
    uri ? new ProxyAgent({ ...proxyOptions, uri: normaliseProxyUrl(uri) }) : undefined;
  const httpProxy = proxyAgent(opts.proxy.http);
  const httpsProxy = proxyAgent(opts.proxy.https);
  const bypass = noProxyMatcher(opts.proxy.noProxy ?? []);
  return {
    // As Go's httpproxy (which ARC uses for a scale set's proxy): each scheme uses only its own
    // proxy, so a proxy set for http alone leaves https direct.
    forUrl(url: URL): Dispatcher {
      const viaProxy = url.protocol === 'https:' ? httpsProxy : httpProxy;
      if (!viaProxy || bypass(url)) return direct;
      return viaProxy;
    },
    viaProxy(url: URL): boolean {
      return !!(url.protocol === 'https:' ? httpsProxy : httpProxy) && !bypass(url);
    },
    async close() {
      await Promise.all([direct, httpProxy, httpsProxy].map((d) => d && closeWithin(d)));
    },
  };
}

/**
 * Makes the proxy client's CONNECT fail with a ProxyTunnelError: undici reports a refused tunnel
 * only in a message (and a proxy it cannot reach as a bare socket error), which would leave callers
 * to guess from wording whose failure it was. Here, where the tunnel is opened, it is certain.
 */
function tunnelFailuresNamed(pool: Pool, origin: URL): Pool {
  const proxy = origin.host;
  const connect = pool.connect.bind(pool) as (
    o: Dispatcher.ConnectOptions,
  ) => Promise<Dispatcher.ConnectData>;
  const named = async (o: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData> => {
    let data: Dispatcher.ConnectData;
    try {
      data = await connect(o);
    } catch (e) {
      // An aborted attempt is the caller's deadline or cancellation, not the proxy's failure.
      if (o.signal && (o.signal as AbortSignal).aborted) throw e;
      throw new ProxyTunnelError(proxyUnreachableCode, proxy, undefined, { cause: e });
    }
    if (data.statusCode !== 200) {
      data.socket.on('error', () => undefined).destroy();
      throw new ProxyTunnelError(proxyRefusedCode, proxy, data.statusCode);
    }
    return data;
  };
  return Object.assign(pool, { connect: named });
}

/** Lets requests in flight finish for a while, then cuts them off, so that shutdown is bounded. */
async function closeWithin(d: Dispatcher, graceMs = 5000): Promise<void> {
  // Not a schedule: a deadline on this one close.
  const cutOff = setTimeout(() => void d.destroy().catch(() => undefined), graceMs);
  try {
    await d.close();
  } catch {
    // Already closed or destroyed: nothing left to release.
  } finally {
    clearTimeout(cutOff);
  }
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

const defaultPorts: Record<string, number> = { 'http:': 80, 'https:': 443 };

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
