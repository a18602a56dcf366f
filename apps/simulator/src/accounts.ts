import { KeyObject, randomBytes, randomUUID } from 'node:crypto';
import { restError } from './errors';
import { decodeJwt, publicKeyFromPem, signHs256, verifyHs256, verifyRs256 } from './jwt';
import type { AppSeed, OwnerRef, RegisteredApp, TokenLifetimes } from './types';

/**
 * The GitHub side: accounts (enterprises, orgs, repos), credentials (PATs, Apps and their
 * installations) and the three tokens that lead to the Actions service (installation token ->
 * registration token -> admin JWT). Each owner scope is its own Actions tenant, so the admin token a
 * config URL earns only opens that owner's scale sets and runners (inferred: the real mapping of
 * owners to service tenants is not visible to clients).
 */

export interface Tenant {
  id: string;
  owner: OwnerRef;
  scopeKey: string;
}

interface OrgRecord {
  name: string;
  enterprise?: string;
}

interface AppRecord {
  appId: number;
  clientId: string;
  key: KeyObject;
  installations: Array<{ owner: OwnerRef; installationId: number }>;
}

interface ExpiringGrant {
  expiresAt: number;
}

export class UnknownOwnerError extends Error {
  constructor(owner: OwnerRef) {
    super(`unknown owner ${describeOwner(owner)}`);
    this.name = 'UnknownOwnerError';
  }
}

export function describeOwner(owner: OwnerRef): string {
  if ('enterprise' in owner) return `enterprises/${owner.enterprise}`;
  return owner.repo ? `${owner.org}/${owner.repo}` : owner.org;
}

export function scopeKeyOf(owner: OwnerRef): string {
  if ('enterprise' in owner) return `enterprise:${owner.enterprise.toLowerCase()}`;
  return owner.repo
    ? `repo:${owner.org.toLowerCase()}/${owner.repo.toLowerCase()}`
    : `org:${owner.org.toLowerCase()}`;
}

/** Parses a config URL path the way clients do: `/org`, `/org/repo`, `/enterprises/ent`. */
export function ownerFromConfigUrl(configUrl: string): OwnerRef | null {
  let url: URL;
  try {
    url = new URL(configUrl.replace(/^\/+|\/+$/g, ''));
  } catch {
    return null;
  }
  const segs = url.pathname
    .replace(/^\/+|\/+$/g, '')
    .split('/')
    .filter(Boolean);
  if (segs.length === 1) return { org: decodeURIComponent(segs[0]) };
  if (segs.length === 2 && segs[0].toLowerCase() === 'enterprises')
    return { enterprise: decodeURIComponent(segs[1]) };
  if (segs.length === 2) return { org: decodeURIComponent(segs[0]), repo: decodeURIComponent(segs[1]) };
  return null;
}

function bearer(authorization: string | undefined, schemes: string[]): string | null {
  if (!authorization) return null;
  const space = authorization.indexOf(' ');
  if (space < 0) return null;
  const scheme = authorization.slice(0, space).toLowerCase();
  if (!schemes.includes(scheme)) return null;
  const token = authorization.slice(space + 1).trim();
  return token.length > 0 ? token : null;
}

export class GitHubAccounts {
  private readonly enterprises = new Map<string, string>();
  private readonly orgs = new Map<string, OrgRecord>();
  private readonly repos = new Map<string, { org: string; repo: string }>();
  private readonly tenantsByScope = new Map<string, Tenant>();
  private readonly tenantsById = new Map<string, Tenant>();
  private readonly pats = new Map<string, OwnerRef[] | null>();
  private readonly apps = new Map<number, AppRecord>();
  private readonly installations = new Map<number, { appId: number; owner: OwnerRef }>();
  private readonly installationTokens = new Map<string, ExpiringGrant & { installationId: number }>();
  private readonly registrationTokens = new Map<string, ExpiringGrant & { scopeKey: string }>();
  private readonly adminTokens = new Map<string, ExpiringGrant & { tenantId: string }>();
  private readonly adminTokenSecret = randomBytes(32);
  private nextTenantId = 1;
  private nextAppId = 1;
  private nextInstallationId = 1;

  constructor(
    private readonly now: () => number,
    readonly lifetimes: TokenLifetimes,
    private readonly onTenantCreated: (tenant: Tenant) => void,
  ) {}

  // ---- accounts ----------------------------------------------------------------------------

  createEnterprise(name: string): void {
    if (!this.enterprises.has(name.toLowerCase())) this.enterprises.set(name.toLowerCase(), name);
    this.ensureTenant({ enterprise: this.enterprises.get(name.toLowerCase()) as string });
  }

  createOrg(name: string, enterprise?: string): void {
    if (enterprise !== undefined && !this.enterprises.has(enterprise.toLowerCase()))
      this.createEnterprise(enterprise);
    const existing = this.orgs.get(name.toLowerCase());
    this.orgs.set(name.toLowerCase(), {
      name: existing?.name ?? name,
      enterprise: enterprise ?? existing?.enterprise,
    });
    this.ensureTenant({ org: existing?.name ?? name });
  }

  /** `owner/name`; the owner org is created when missing. */
  createRepo(fullName: string): void {
    const [org, repo, ...rest] = fullName.split('/');
    if (!org || !repo || rest.length > 0)
      throw new Error(`invalid repository name "${fullName}", want owner/name`);
    if (!this.orgs.has(org.toLowerCase())) this.createOrg(org);
    const key = `${org}/${repo}`.toLowerCase();
    if (!this.repos.has(key))
      this.repos.set(key, { org: this.orgs.get(org.toLowerCase())?.name ?? org, repo });
    this.ensureTenant({ org, repo });
  }

  ownerExists(owner: OwnerRef): boolean {
    if ('enterprise' in owner) return this.enterprises.has(owner.enterprise.toLowerCase());
    if (owner.repo) return this.repos.has(`${owner.org}/${owner.repo}`.toLowerCase());
    return this.orgs.has(owner.org.toLowerCase());
  }

  listRepos(): string[] {
    return [...this.repos.values()].map((r) => `${r.org}/${r.repo}`);
  }

  tenantFor(owner: OwnerRef): Tenant {
    const tenant = this.tenantsByScope.get(scopeKeyOf(owner));
    if (!tenant) throw new UnknownOwnerError(owner);
    return tenant;
  }

  tenantById(id: string): Tenant | undefined {
    return this.tenantsById.get(id);
  }

  /** The tenants whose scale sets may run a job of `owner/name`: the repo's, its org's, the org's enterprise's. */
  tenantsForRepo(fullName: string): Tenant[] {
    const [org, repo] = fullName.split('/');
    const out: Tenant[] = [];
    const add = (owner: OwnerRef): void => {
      const t = this.tenantsByScope.get(scopeKeyOf(owner));
      if (t) out.push(t);
    };
    if (org && repo) add({ org, repo });
    if (org) add({ org });
    const ent = org ? this.orgs.get(org.toLowerCase())?.enterprise : undefined;
    if (ent) add({ enterprise: ent });
    return out;
  }

  private ensureTenant(owner: OwnerRef): void {
    const scopeKey = scopeKeyOf(owner);
    if (this.tenantsByScope.has(scopeKey)) return;
    const tenant: Tenant = { id: String(this.nextTenantId++), owner, scopeKey };
    this.tenantsByScope.set(scopeKey, tenant);
    this.tenantsById.set(tenant.id, tenant);
    this.onTenantCreated(tenant);
  }

  /** Whether a grant on `holder` reaches `target`: same owner, an org's repos, an enterprise's orgs and their repos. */
  private covers(holder: OwnerRef, target: OwnerRef): boolean {
    if (scopeKeyOf(holder) === scopeKeyOf(target)) return true;
    if ('enterprise' in target) return false;
    if ('enterprise' in holder) {
      return (
        this.orgs.get(target.org.toLowerCase())?.enterprise?.toLowerCase() === holder.enterprise.toLowerCase()
      );
    }
    return !holder.repo && !!target.repo && holder.org.toLowerCase() === target.org.toLowerCase();
  }

  // ---- credentials -------------------------------------------------------------------------

  addPat(token: string, owners?: OwnerRef[]): void {
    this.pats.set(token, owners ?? null);
  }

  registerApp(seed: AppSeed): RegisteredApp {
    const appId = seed.appId ?? this.nextAppId;
    if (this.apps.has(appId)) throw new Error(`a GitHub App with id ${appId} is already registered`);
    this.nextAppId = Math.max(this.nextAppId, appId + 1);
    const record: AppRecord = {
      appId,
      clientId: seed.clientId ?? `Iv1.sim${appId.toString(16).padStart(10, '0')}`,
      key: publicKeyFromPem(seed.publicKeyPem),
      installations: [],
    };
    this.apps.set(appId, record);
    for (const owner of seed.installations ?? []) this.installApp(appId, owner);
    return this.appView(record);
  }

  installApp(appId: number, owner: OwnerRef): number {
    const app = this.apps.get(appId);
    if (!app) throw new Error(`no GitHub App with id ${appId}`);
    if (!this.ownerExists(owner)) throw new UnknownOwnerError(owner);
    const installationId = this.nextInstallationId++;
    app.installations.push({ owner, installationId });
    this.installations.set(installationId, { appId, owner });
    return installationId;
  }

  listApps(): RegisteredApp[] {
    return [...this.apps.values()].map((a) => this.appView(a));
  }

  private appView(app: AppRecord): RegisteredApp {
    return {
      appId: app.appId,
      clientId: app.clientId,
      installations: app.installations.map((i) => ({ ...i })),
    };
  }

  // ---- REST token exchanges ----------------------------------------------------------------

  /** `POST /app/installations/{id}/access_tokens`: the app proves itself with an RS256 JWT. */
  issueInstallationToken(authorization: string | undefined, installationId: number): Record<string, unknown> {
    const raw = bearer(authorization, ['bearer']);
    if (!raw) throw restError(401, 'A JSON web token could not be decoded');
    const jwt = decodeJwt(raw);
    if (!jwt) throw restError(401, 'A JSON web token could not be decoded');
    if (jwt.header.alg !== 'RS256')
      throw restError(401, `'alg' must be RS256, got ${String(jwt.header.alg)}`);
    const iss = jwt.claims.iss;
    const app = [...this.apps.values()].find((a) => String(a.appId) === String(iss) || a.clientId === iss);
    if (!app)
      throw restError(401, `'Issuer' claim ('iss') ${JSON.stringify(iss)} is not a registered GitHub App`);
    if (!verifyRs256(jwt, app.key)) throw restError(401, 'JWT signature does not match the app public key');
    const { iat, exp } = jwt.claims;
    if (typeof iat !== 'number' || typeof exp !== 'number') {
      throw restError(401, "'Issued at' ('iat') and 'Expiration time' ('exp') must be numeric");
    }
    const nowSec = Math.floor(this.now() / 1000);
    const skew = 60;
    if (exp <= nowSec) throw restError(401, "'Expiration time' claim ('exp') is in the past");
    if (iat > nowSec + skew)
      throw restError(401, "'Issued at' claim ('iat') must be an Integer representing a time in the past");
    if (exp - nowSec > 600 + skew || exp - iat > 600 + skew || exp <= iat) {
      throw restError(401, "'Expiration time' claim ('exp') is too far in the future");
    }
    const inst = this.installations.get(installationId);
    if (!inst || inst.appId !== app.appId) throw restError(404, 'Not Found');
    const token = `ghs_${randomBytes(18).toString('base64url')}`;
    const expiresAt = this.now() + this.lifetimes.installationTokenSeconds * 1000;
    this.installationTokens.set(token, { installationId, expiresAt });
    return {
      token,
      expires_at: isoSeconds(expiresAt),
      permissions: { organization_self_hosted_runners: 'write', administration: 'write' },
      repository_selection: 'all',
    };
  }

  /** `POST .../actions/runners/registration-token` with a PAT or an installation token. */
  issueRegistrationToken(authorization: string | undefined, owner: OwnerRef): Record<string, unknown> {
    const raw = bearer(authorization, ['bearer', 'token']);
    if (!raw) throw restError(401, 'Requires authentication');
    let grants: OwnerRef[] | null;
    if (this.pats.has(raw)) {
      grants = this.pats.get(raw) ?? null;
    } else {
      const inst = this.installationTokens.get(raw);
      if (!inst || inst.expiresAt <= this.now()) throw restError(401, 'Bad credentials');
      const installation = this.installations.get(inst.installationId);
      if (!installation) throw restError(401, 'Bad credentials');
      grants = [installation.owner];
    }
    if (!this.ownerExists(owner)) throw restError(404, 'Not Found');
    if (grants !== null && !grants.some((g) => this.covers(g, owner))) {
      throw restError(403, `Resource not accessible by this token (${describeOwner(owner)})`);
    }
    const token = randomBytes(20).toString('hex').toUpperCase();
    const expiresAt = this.now() + this.lifetimes.registrationTokenSeconds * 1000;
    this.registrationTokens.set(token, { scopeKey: scopeKeyOf(owner), expiresAt });
    return { token, expires_at: new Date(expiresAt).toISOString().replace('Z', '+00:00') };
  }

  /**
   * `POST /actions/runner-registration`: a registration token plus the config URL it was issued for
   * buys the Actions-service base URL of that owner's tenant and an admin JWT.
   */
  registerRunnerAdmin(
    authorization: string | undefined,
    body: unknown,
    origin: string,
  ): { url: string; token: string; token_schema: string } {
    const raw = bearer(authorization, ['remoteauth']);
    if (!raw) throw restError(401, 'Requires RemoteAuth <registration token>');
    const grant = this.registrationTokens.get(raw);
    if (!grant || grant.expiresAt <= this.now()) throw restError(401, 'Bad registration token');
    const url = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).url : undefined;
    if (typeof url !== 'string' || url.length === 0) throw restError(400, 'Body must have a non-empty "url"');
    const owner = ownerFromConfigUrl(url);
    if (!owner)
      throw restError(400, `"${url}": invalid config URL, should point to an enterprise, org, or repository`);
    if (scopeKeyOf(owner) !== grant.scopeKey) {
      throw restError(404, `The registration token was not issued for ${describeOwner(owner)}`);
    }
    const tenant = this.tenantFor(owner);
    const nowSec = Math.floor(this.now() / 1000);
    const exp = nowSec + this.lifetimes.adminTokenSeconds;
    const token = signHs256(
      {
        iss: 'actions-simulator',
        aud: 'actions',
        sub: tenant.scopeKey,
        tid: tenant.id,
        iat: nowSec,
        nbf: nowSec,
        exp,
        jti: randomUUID(),
      },
      this.adminTokenSecret,
    );
    this.adminTokens.set(token, { tenantId: tenant.id, expiresAt: exp * 1000 });
    return { url: `${origin}/tenant/${tenant.id}/`, token, token_schema: 'OAuthAccessToken' };
  }

  /** The tenant an admin token opens, or null when the token is unknown, expired or for another tenant. */
  adminTokenValid(authorization: string | undefined, tenantId: string): boolean {
    const raw = bearer(authorization, ['bearer']);
    if (!raw || !verifyHs256(raw, this.adminTokenSecret)) return false;
    const grant = this.adminTokens.get(raw);
    return !!grant && grant.tenantId === tenantId && grant.expiresAt > this.now();
  }

  /** Makes every admin token issued so far invalid (the next Actions call answers 401). */
  revokeAdminTokens(): void {
    this.adminTokens.clear();
  }
}

function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
