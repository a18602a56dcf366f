import type { ClientRequest } from 'node:http';
import type { Socket } from 'node:net';
import type { AgentConnectOpts } from 'agent-base';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { ProxyTunnelError, proxyRefusedCode, proxyUnreachableCode } from './error-codes';

export interface TunnelAgentOptions {
  keepAlive: boolean;
  /** Idle timeout of pooled sockets (Node's agent option). */
  timeout: number;
  /** Trusted roots, for an https proxy and for the target's TLS inside the tunnel. */
  ca?: string[];
  /** Bounds connecting to the proxy and its answer to CONNECT. */
  tunnelTimeoutMs: number;
}

/**
 * A keep-alive agent that reaches every target, http or https, through a CONNECT tunnel
 * (https-proxy-agent), with two things that agent leaves out:
 * - a deadline on the tunnel: a proxy that accepts the connection and never answers CONNECT would
 *   otherwise hold the request and its socket for as long as the proxy keeps the connection;
 * - failures named where they arise: a refused tunnel becomes a ProxyTunnelError with the proxy's
 *   status (https-proxy-agent would hand the proxy's answer to the request as if the target had sent
 *   it), a proxy that cannot be reached one without a status.
 * Proxy-Authorization comes from the proxy URL's `user:pass@` (https-proxy-agent decodes it).
 */
export class TunnelAgent extends HttpsProxyAgent<string> {
  private readonly tunnelTimeoutMs: number;
  private readonly targetTls: { ca?: string[] };
  /** Tunnels being opened, ended by destroy() so that closing the client is not held up by a proxy. */
  private readonly opening = new Set<AbortController>();

  constructor(proxyUrl: string, o: TunnelAgentOptions) {
    const { tunnelTimeoutMs, ...agentOptions } = o;
    super(proxyUrl, agentOptions);
    this.tunnelTimeoutMs = tunnelTimeoutMs;
    // https-proxy-agent keeps no agent options for the target's TLS, so the roots are added here.
    this.targetTls = o.ca ? { ca: o.ca } : {};
  }

  override async connect(req: ClientRequest, opts: AgentConnectOpts): Promise<Socket> {
    const proxy = this.proxy.host;
    const tunnel = new AbortController();
    const deadline = setTimeout(
      () => tunnel.abort(new Error(`no answer to CONNECT within ${this.tunnelTimeoutMs} ms`)),
      this.tunnelTimeoutMs,
    );
    // The request was cancelled (its own deadline or signal): the tunnel is not needed any more.
    const cancelled = () => tunnel.abort(new Error('request cancelled while the tunnel was opened'));
    req.once('close', cancelled);
    this.opening.add(tunnel);
    let status: number | undefined;
    const onProxyConnect = (answer: { statusCode: number }) => {
      status = answer.statusCode;
    };
    req.once('proxyConnect', onProxyConnect);
    // The socket to the proxy is made synchronously from connectOpts at the start of connect():
    // giving it the signal there lets the deadline destroy it, which ends the wait for an answer.
    const base = this.connectOpts;
    this.connectOpts = { ...base, signal: tunnel.signal };
    let pending: Promise<Socket>;
    try {
      pending = super.connect(req, { ...opts, ...this.targetTls }) as Promise<Socket>;
    } finally {
      this.connectOpts = base;
    }
    try {
      const socket = await Promise.race([pending, aborted(tunnel.signal)]);
      if (status !== 200) {
        // A stand-in socket carrying the proxy's answer: nothing of the request must reach it.
        socket.destroy();
        throw new ProxyTunnelError(proxyRefusedCode, proxy, status);
      }
      return socket;
    } catch (e) {
      if (e instanceof ProxyTunnelError) throw e;
      // A request cancelled by its caller failed on the caller's deadline, not on the proxy.
      if (req.destroyed) throw e;
      throw new ProxyTunnelError(proxyUnreachableCode, proxy, undefined, { cause: e });
    } finally {
      clearTimeout(deadline);
      this.opening.delete(tunnel);
      req.off('close', cancelled);
      req.off('proxyConnect', onProxyConnect);
      pending.catch(() => undefined);
    }
  }

  override destroy(): void {
    for (const tunnel of this.opening) tunnel.abort(new Error('the client was closed'));
    super.destroy();
  }
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(signal.reason);
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}
