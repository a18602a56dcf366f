import { constants, createPublicKey, randomBytes, verify, X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A stand-in for the two Azure services a Key Vault reader talks to, on one HTTPS port: the Entra ID
 * token endpoint (client credentials with a certificate-signed client assertion) and the Key Vault
 * secrets REST API (`GET /secrets/{name}/{version}`), with Key Vault's bearer challenge: a request
 * without a token gets 401 and `WWW-Authenticate: Bearer authorization=..., resource=...`, which is
 * how the SDK learns which tenant and scope to ask a token for. Enough of both for
 * `@azure/identity`'s ClientCertificateCredential and `@azure/keyvault-secrets`' SecretClient, so a
 * test sees the whole flow a controller runs against Azure, over TLS with a CA the test trusts.
 */
export interface KeyVaultStandInOptions {
  /** The server's certificate and key (PEM); the caller's CA must sign them for 127.0.0.1. */
  tls: { cert: string; key: string };
  /** The resource the challenge names; Key Vault's own by default (then the SDK must skip its check). */
  resource?: string;
}

/** One request seen, without its body or token. */
export interface KeyVaultRequest {
  method: string;
  path: string;
  /** What was answered; 0 when the connection was reset instead. */
  status: number;
  /** Whether it carried a bearer token. */
  authenticated: boolean;
  /** Set when an outage answered it (`status` 0: the connection was reset). */
  outage?: KeyVaultOutageTarget;
}

/** Which of the two services an outage takes down. */
export type KeyVaultOutageTarget = 'vault' | 'token';

/**
 * How a service in an outage answers: with this status (Key Vault's and Entra's error body), by
 * closing the connection without an answer (a load balancer dropping it, a node going away), or not
 * at all until the outage ends (`silence`: a request that hangs).
 */
export type KeyVaultOutageAnswer = { status: number } | 'reset' | 'silence';

interface App {
  tenantId: string;
  clientId: string;
  certificate: X509Certificate;
}

interface IssuedToken {
  tenantId: string;
  clientId: string;
  scope: string;
  expiresAt: number;
}

const TOKEN_LIFETIME_S = 3600;
const KEY_VAULT_RESOURCE = 'https://vault.azure.net';

export class KeyVaultStandIn {
  readonly requests: KeyVaultRequest[] = [];
  private readonly secrets = new Map<string, string>();
  private readonly apps = new Map<string, App>();
  private readonly denied = new Set<string>();
  private readonly tokens = new Map<string, IssuedToken>();
  private readonly sockets = new Set<Socket>();
  private readonly outages = new Map<KeyVaultOutageTarget, KeyVaultOutageAnswer>();
  private readonly silenced = new Set<Socket>();
  private readonly resource: string;
  private server?: Server;
  private port = 0;

  constructor(private readonly options: KeyVaultStandInOptions) {
    this.resource = options.resource ?? KEY_VAULT_RESOURCE;
  }

  /** `https://127.0.0.1:<port>`: both the vault URL and the authority host. */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer({ cert: this.options.tls.cert, key: this.options.tls.key }, (req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent)
          this.send(req, res, 500, { error: { code: 'InternalError', message: String(err) } });
      });
    });
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    // A client that refuses our certificate aborts the handshake; that is what some tests want.
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** An app registration in a tenant, authenticating with this certificate (PEM, public part). */
  registerApp(tenantId: string, clientId: string, certificatePem: string): void {
    this.apps.set(clientId, { tenantId, clientId, certificate: new X509Certificate(certificatePem) });
  }

  setSecret(name: string, value: string): void {
    this.secrets.set(name, value);
  }

  deleteSecret(name: string): void {
    this.secrets.delete(name);
  }

  /** The vault's access policy refuses this app (403 on every read) until `allow`. */
  deny(clientId: string): void {
    this.denied.add(clientId);
  }

  allow(clientId: string): void {
    this.denied.delete(clientId);
  }

  /**
   * Until {@link endOutage}, every request to the vault's secrets (`vault`) or to the token endpoint
   * (`token`) is answered with `answer`: what a transient Azure failure looks like to the client.
   * The challenge and token flow around it are unchanged.
   */
  startOutage(target: KeyVaultOutageTarget, answer: KeyVaultOutageAnswer): void {
    this.outages.set(target, answer);
  }

  /** The outage of `target` ends; requests it left hanging are closed unanswered. */
  endOutage(target: KeyVaultOutageTarget): void {
    this.outages.delete(target);
    for (const socket of this.silenced) socket.destroy();
    this.silenced.clear();
  }

  /** Requests to `target` answered by an outage (a status or a reset). */
  outageAnswers(target: KeyVaultOutageTarget): number {
    return this.requests.filter((r) => r.outage === target).length;
  }

  /** Reads of a secret that returned its value. */
  secretReads(name: string): number {
    return this.requests.filter((r) => r.status === 200 && r.path.startsWith(`/secrets/${name}/`)).length;
  }

  /** Tokens the token endpoint issued. */
  tokensIssued(): number {
    return this.requests.filter((r) => r.status === 200 && r.path.endsWith('/oauth2/v2.0/token')).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const path = url.pathname;
    const outage = this.outageOf(req.method, path);
    if (outage !== undefined) return this.answerOutage(req, res, outage);
    const openId = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(path);
    if (req.method === 'GET' && openId) return this.openIdConfiguration(req, res, openId[1]);
    const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
    if (req.method === 'POST' && token) return this.issueToken(req, res, token[1]);
    const secret = /^\/secrets\/([^/]+)\/?([^/]*)$/.exec(path);
    if (req.method === 'GET' && secret) return this.getSecret(req, res, decodeURIComponent(secret[1]));
    this.send(req, res, 404, { error: { code: 'NotFound', message: `no route ${req.method} ${path}` } });
  }

  private outageOf(method: string | undefined, path: string): KeyVaultOutageTarget | undefined {
    if (method === 'GET' && path.startsWith('/secrets/') && this.outages.has('vault')) return 'vault';
    if (method === 'POST' && path.endsWith('/oauth2/v2.0/token') && this.outages.has('token')) return 'token';
    return undefined;
  }

  private answerOutage(req: IncomingMessage, res: ServerResponse, target: KeyVaultOutageTarget): void {
    const answer = this.outages.get(target);
    if (answer === undefined) return;
    if (answer === 'silence') {
      this.record(req, 0, target);
      this.silenced.add(req.socket);
      return;
    }
    if (answer === 'reset') {
      this.record(req, 0, target);
      // Closed without an answer: the client sees the connection reset (socket hang up).
      req.socket.destroy();
      return;
    }
    const body =
      target === 'vault'
        ? { error: { code: 'ServiceUnavailable', message: 'The service is temporarily unavailable.' } }
        : {
            error: 'temporarily_unavailable',
            error_description: 'AADSTS90033: A transient error has occurred.',
          };
    this.send(req, res, answer.status, body, target);
  }

  private openIdConfiguration(req: IncomingMessage, res: ServerResponse, tenant: string): void {
    const base = `${this.url}/${tenant}`;
    this.send(req, res, 200, {
      token_endpoint: `${base}/oauth2/v2.0/token`,
      authorization_endpoint: `${base}/oauth2/v2.0/authorize`,
      device_authorization_endpoint: `${base}/oauth2/v2.0/devicecode`,
      end_session_endpoint: `${base}/oauth2/v2.0/logout`,
      issuer: `${base}/v2.0`,
      jwks_uri: `${base}/discovery/v2.0/keys`,
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
      tenant_region_scope: null,
      cloud_instance_name: 'microsoftonline.com',
    });
  }

  /**
   * Client credentials with a client assertion: a JWT signed with the registered certificate's key,
   * for this token endpoint, issued by and about the client. What Entra checks, checked here: a
   * wrong certificate or client is `invalid_client` (401), an unknown tenant 400.
   */
  private async issueToken(req: IncomingMessage, res: ServerResponse, tenantId: string): Promise<void> {
    const form = new URLSearchParams(await readBody(req));
    const oauthError = (status: number, error: string, description: string) =>
      this.send(req, res, status, { error, error_description: description, error_codes: [status] });
    if (form.get('grant_type') !== 'client_credentials') {
      return oauthError(400, 'unsupported_grant_type', 'only client_credentials');
    }
    const clientId = form.get('client_id') ?? '';
    const app = this.apps.get(clientId);
    if (!app || app.tenantId !== tenantId) {
      return oauthError(
        400,
        'unauthorized_client',
        `AADSTS700016: Application ${clientId} not found in tenant ${tenantId}`,
      );
    }
    const assertion = form.get('client_assertion') ?? '';
    const problem = checkAssertion(assertion, app, `${this.url}/${tenantId}/oauth2/v2.0/token`);
    if (problem) return oauthError(401, 'invalid_client', `AADSTS700027: ${problem}`);
    const scope = form.get('scope') ?? '';
    const accessToken = randomBytes(24).toString('base64url');
    this.tokens.set(accessToken, {
      tenantId,
      clientId,
      scope,
      expiresAt: Date.now() + TOKEN_LIFETIME_S * 1000,
    });
    this.send(req, res, 200, {
      token_type: 'Bearer',
      expires_in: TOKEN_LIFETIME_S,
      ext_expires_in: TOKEN_LIFETIME_S,
      access_token: accessToken,
    });
  }

  private getSecret(req: IncomingMessage, res: ServerResponse, name: string): void {
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const token = bearer === undefined ? undefined : this.tokens.get(bearer);
    if (!token || token.expiresAt < Date.now() || token.scope !== `${this.resource}/.default`) {
      // Key Vault's challenge: which authority (with the vault's tenant) and which resource to ask.
      const tenant = [...this.apps.values()][0]?.tenantId ?? 'common';
      res.setHeader(
        'WWW-Authenticate',
        `Bearer authorization="${this.url}/${tenant}", resource="${this.resource}"`,
      );
      return this.send(req, res, 401, {
        error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' },
      });
    }
    if (this.denied.has(token.clientId)) {
      return this.send(req, res, 403, {
        error: {
          code: 'Forbidden',
          message: `The user, group or application 'appid=${token.clientId}' does not have secrets get permission on key vault.`,
          innererror: { code: 'AccessDenied' },
        },
      });
    }
    const value = this.secrets.get(name);
    if (value === undefined) {
      return this.send(req, res, 404, {
        error: {
          code: 'SecretNotFound',
          message: `A secret with (name/id) ${name} was not found in this key vault.`,
        },
      });
    }
    const now = Math.floor(Date.now() / 1000);
    this.send(req, res, 200, {
      value,
      id: `${this.url}/secrets/${name}/0123456789abcdef0123456789abcdef`,
      attributes: { enabled: true, created: now, updated: now, recoveryLevel: 'Recoverable+Purgeable' },
      tags: {},
    });
  }

  private record(req: IncomingMessage, status: number, outage?: KeyVaultOutageTarget): void {
    this.requests.push({
      method: req.method ?? '',
      path: new URL(req.url ?? '/', this.url).pathname,
      status,
      authenticated: /^Bearer /i.test(req.headers.authorization ?? ''),
      ...(outage === undefined ? {} : { outage }),
    });
  }

  private send(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    body: unknown,
    outage?: KeyVaultOutageTarget,
  ): void {
    this.record(req, status, outage);
    const text = JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(text),
    });
    res.end(text);
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Why the client assertion is refused, or undefined when it is good. */
function checkAssertion(assertion: string, app: App, audience: string): string | undefined {
  const parts = assertion.split('.');
  if (parts.length !== 3) return 'client_assertion is not a JWT';
  const [headerPart, payloadPart, signaturePart] = parts;
  let header: { alg?: string };
  let payload: { aud?: string; iss?: string; sub?: string; exp?: number };
  try {
    header = JSON.parse(Buffer.from(headerPart, 'base64url').toString('utf8')) as typeof header;
    payload = JSON.parse(Buffer.from(payloadPart, 'base64url').toString('utf8')) as typeof payload;
  } catch {
    return 'client_assertion does not decode';
  }
  const key = createPublicKey(app.certificate.publicKey.export({ type: 'spki', format: 'pem' }));
  const data = Buffer.from(`${headerPart}.${payloadPart}`);
  const signature = Buffer.from(signaturePart, 'base64url');
  const valid =
    header.alg === 'RS256'
      ? verify('sha256', data, key, signature)
      : header.alg === 'PS256'
        ? verify('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature)
        : false;
  if (!valid)
    return `client assertion signature does not verify with the certificate registered for ${app.clientId}`;
  if (payload.aud !== audience) return `client assertion audience ${payload.aud} is not ${audience}`;
  if (payload.iss !== app.clientId || payload.sub !== app.clientId)
    return 'client assertion iss/sub is not the client';
  if ((payload.exp ?? 0) * 1000 < Date.now()) return 'client assertion expired';
  return undefined;
}
