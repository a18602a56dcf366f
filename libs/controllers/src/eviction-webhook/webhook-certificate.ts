import { X509Certificate, createPrivateKey } from 'node:crypto';
import type { V1OwnerReference, V1Secret, V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import type { ResourceKind } from '@aro/api';
import { type KubeApi, SecretKind, isAlreadyExists, isConflict, isNotFound } from '@aro/kube';
import type { Logger } from '@aro/observability';
import { describeError } from '../shared/describe-error';
import {
  type PemPair,
  certificatesOf,
  inRenewalWindow,
  issueAuthority,
  issueServingCertificate,
  servingCertificateProblem,
} from './certificate-issuer';

export const ValidatingWebhookConfigurationKind: ResourceKind = {
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
};

/** The keys of the Secret (kubernetes.io/tls, plus the authority that signs the serving pair). */
export const WEBHOOK_SECRET_KEYS = {
  cert: 'tls.crt',
  key: 'tls.key',
  /** The authorities the API server trusts: the current one first, then the one before a rotation. */
  caBundle: 'ca.crt',
  caKey: 'ca.key',
} as const;

/** The authority outlives this many serving certificates, so it rotates seldom. */
const AUTHORITY_LIFETIMES = 10;
/** Enough for two replicas racing twice over (each loss re-reads what the winner wrote). */
const MAX_ATTEMPTS = 5;

export interface WebhookCertificateOptions {
  /** The controller's namespace, where the Secret and the Service live. */
  namespace: string;
  secretName: string;
  /** The Service the API server dials: the certificate names `<service>.<namespace>.svc`. */
  serviceName: string;
  /** The chart's one ValidatingWebhookConfiguration, whose `caBundle` is kept to the Secret's. */
  configurationName: string;
  /** Life of a serving certificate; renewed once a third of it is left. */
  validityDays: number;
}

/** The chart's configuration, as read and written (only its webhooks' caBundle is changed). */
export type WebhookConfiguration = V1ValidatingWebhookConfiguration;

/**
 * The webhook's certificate, made by the controller rather than by Helm, so that a render holds no key
 * material and `helm template` (Argo CD, golden files) gives the same output every time.
 *
 * Every replica serves the webhook, so every replica calls `ensure` at start and again on each refresh;
 * the Secret is the one truth they agree on. Whoever finds it missing creates it (create-if-absent:
 * the losers of a race get AlreadyExists and read the winner's); whoever finds it due for renewal
 * replaces it at the resourceVersion it read (the losers get Conflict and read again). So two replicas
 * starting together end with one certificate, and each serves what the Secret holds.
 *
 * The Secret is owned by the ValidatingWebhookConfiguration (a cluster-scoped owner): uninstalling the
 * chart removes the configuration and the garbage collector removes the Secret with it.
 */
export class WebhookCertificate {
  /** The last look found no configuration to set the caBundle of. */
  configurationMissing = false;

  constructor(
    private readonly client: Pick<KubeApi, 'get' | 'create' | 'replace'>,
    private readonly options: WebhookCertificateOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** The names the API server may dial (clientConfig.service resolves to the first). */
  get hosts(): string[] {
    const { serviceName: service, namespace } = this.options;
    return [
      `${service}.${namespace}.svc`,
      `${service}.${namespace}.svc.cluster.local`,
      `${service}.${namespace}`,
    ];
  }

  /** The serving pair to use now, the Secret and the configuration's caBundle brought up to date first. */
  async ensure(): Promise<PemPair> {
    const { namespace, secretName } = this.options;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const configuration = await this.configuration();
      const secret = await this.readSecret();
      if (!secret) {
        const material = await this.issue(undefined);
        try {
          await this.client.create<V1Secret>(SecretKind, this.secretWith(material, configuration));
          this.logger.info('Created the eviction webhook certificate', this.described(material));
        } catch (err) {
          if (isAlreadyExists(err)) continue;
          throw err;
        }
        await this.updateCaBundle(configuration, material[WEBHOOK_SECRET_KEYS.caBundle]);
        return servingPair(material);
      }
      const stored = stringData(secret);
      const problem = servingCertificateProblem(
        servingPair(stored),
        stored[WEBHOOK_SECRET_KEYS.caBundle] ?? '',
        this.hosts,
        this.now(),
      );
      if (problem === undefined) {
        await this.adoptBy(secret, configuration);
        await this.updateCaBundle(configuration, stored[WEBHOOK_SECRET_KEYS.caBundle]);
        return servingPair(stored);
      }
      const material = await this.issue(stored);
      const renewed = this.secretWith(material, configuration);
      renewed.metadata = { ...renewed.metadata, resourceVersion: secret.metadata?.resourceVersion };
      try {
        // At the version read: of two replicas renewing together, the second gets Conflict.
        await this.client.replace<V1Secret>(SecretKind, renewed);
        this.logger.info('Renewed the eviction webhook certificate', {
          ...this.described(material),
          reason: problem,
        });
      } catch (err) {
        if (isConflict(err) || isNotFound(err)) continue;
        throw err;
      }
      await this.updateCaBundle(configuration, material[WEBHOOK_SECRET_KEYS.caBundle]);
      return servingPair(material);
    }
    throw new Error(
      `the eviction webhook certificate in Secret ${namespace}/${secretName} changed under every one of ${MAX_ATTEMPTS} attempts`,
    );
  }

  /**
   * A Secret made before the configuration existed (a replica that started first) gets its owner once
   * the configuration appears, so that an uninstall still removes it. One write, once.
   */
  private async adoptBy(secret: V1Secret, configuration: WebhookConfiguration | undefined): Promise<void> {
    const uid = configuration?.metadata?.uid;
    if (!uid || secret.metadata?.ownerReferences?.some((o) => o.uid === uid)) return;
    const owner = this.secretWith({}, configuration).metadata?.ownerReferences ?? [];
    try {
      await this.client.replace<V1Secret>(SecretKind, {
        ...secret,
        metadata: { ...secret.metadata, ownerReferences: owner },
      });
    } catch (err) {
      // Another replica adopted or renewed it meanwhile: the next refresh looks again.
      if (isConflict(err) || isNotFound(err)) return;
      throw err;
    }
  }

  private async configuration(): Promise<WebhookConfiguration | undefined> {
    try {
      const configuration = await this.client.get<WebhookConfiguration>(
        ValidatingWebhookConfigurationKind,
        '',
        this.options.configurationName,
      );
      this.configurationMissing = false;
      return configuration;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      // Served all the same: the chart creates the configuration, possibly after this replica started
      // (Helm creates webhook configurations after Deployments); the caller comes back soon. Said once
      // per absence, not on every look (every 5 s while it lasts).
      if (!this.configurationMissing) {
        this.logger.warn(
          'The eviction webhook configuration is missing: the API server calls no webhook until it exists',
          { configuration: this.options.configurationName },
        );
      }
      this.configurationMissing = true;
      return undefined;
    }
  }

  private async readSecret(): Promise<V1Secret | undefined> {
    try {
      return await this.client.get<V1Secret>(SecretKind, this.options.namespace, this.options.secretName);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * A new serving pair, signed by the stored authority while it outlives the new certificate;
   * otherwise by a new authority, with the old one kept in the bundle so that replicas still serving
   * the old pair stay trusted until they read the new one.
   */
  private async issue(stored: Record<string, string> | undefined): Promise<Record<string, string>> {
    const now = this.now();
    const { validityDays } = this.options;
    const validUntil = now + validityDays * 24 * 60 * 60 * 1000;
    let authority = storedAuthority(stored);
    let bundle = authority ? (stored?.[WEBHOOK_SECRET_KEYS.caBundle] ?? authority.cert) : '';
    if (!authority || !authorityOutlives(authority.cert, validUntil, now)) {
      // Still trusted until it expires: replicas serving its pair keep working until they reload.
      const previous =
        authority && Date.parse(new X509Certificate(authority.cert).validTo) > now ? authority.cert : '';
      authority = await issueAuthority(`${this.hosts[0]}-ca`, validityDays * AUTHORITY_LIFETIMES, now);
      bundle = authority.cert + previous;
    }
    const serving = await issueServingCertificate(authority, { hosts: this.hosts, validityDays, now });
    return {
      [WEBHOOK_SECRET_KEYS.cert]: serving.cert,
      [WEBHOOK_SECRET_KEYS.key]: serving.key,
      [WEBHOOK_SECRET_KEYS.caBundle]: bundle,
      [WEBHOOK_SECRET_KEYS.caKey]: authority.key,
    };
  }

  private secretWith(
    material: Record<string, string>,
    configuration: WebhookConfiguration | undefined,
  ): V1Secret {
    const owner: V1OwnerReference | undefined =
      configuration?.metadata?.uid && configuration.metadata.name
        ? {
            apiVersion: `${ValidatingWebhookConfigurationKind.group}/${ValidatingWebhookConfigurationKind.version}`,
            kind: ValidatingWebhookConfigurationKind.kind,
            name: configuration.metadata.name,
            uid: configuration.metadata.uid,
          }
        : undefined;
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: this.options.secretName,
        namespace: this.options.namespace,
        labels: {
          'app.kubernetes.io/component': 'eviction-webhook',
          'app.kubernetes.io/managed-by': 'aro-controller',
        },
        ...(owner ? { ownerReferences: [owner] } : {}),
      },
      data: Object.fromEntries(
        Object.entries(material).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
      ),
    };
  }

  /**
   * The configuration trusts exactly the Secret's bundle. A replace at the resourceVersion read, of the
   * object as read: the fields Helm or Argo CD own stay as they are, and a concurrent writer's change
   * is not overwritten (the next refresh sees the bundle again).
   */
  private async updateCaBundle(
    configuration: WebhookConfiguration | undefined,
    bundle: string | undefined,
  ): Promise<void> {
    if (!configuration || !bundle) return;
    const caBundle = Buffer.from(bundle).toString('base64');
    const webhooks = configuration.webhooks ?? [];
    if (webhooks.every((w) => w.clientConfig?.caBundle === caBundle)) return;
    try {
      await this.client.replace<WebhookConfiguration>(ValidatingWebhookConfigurationKind, {
        ...configuration,
        webhooks: webhooks.map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle } })),
      });
      this.logger.info('Set the eviction webhook configuration’s CA bundle', {
        configuration: this.options.configurationName,
      });
    } catch (err) {
      if (isConflict(err)) return;
      throw new Error(
        `failed to set the caBundle of ValidatingWebhookConfiguration ${this.options.configurationName}: ${describeError(err)}`,
        { cause: err },
      );
    }
  }

  private described(material: Record<string, string>): Record<string, string> {
    const cert = new X509Certificate(material[WEBHOOK_SECRET_KEYS.cert]);
    return {
      secret: `${this.options.namespace}/${this.options.secretName}`,
      hosts: this.hosts.join(','),
      validTo: new Date(cert.validTo).toISOString(),
    };
  }
}

function stringData(secret: V1Secret): Record<string, string> {
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([key, value]) => [
      key,
      Buffer.from(value, 'base64').toString('utf8'),
    ]),
  );
}

function servingPair(material: Record<string, string>): PemPair {
  return { cert: material[WEBHOOK_SECRET_KEYS.cert] ?? '', key: material[WEBHOOK_SECRET_KEYS.key] ?? '' };
}

/** The stored authority (the bundle's first certificate and its key), when it can sign. */
function storedAuthority(stored: Record<string, string> | undefined): PemPair | undefined {
  const bundle = stored?.[WEBHOOK_SECRET_KEYS.caBundle];
  const key = stored?.[WEBHOOK_SECRET_KEYS.caKey];
  if (!bundle || !key) return undefined;
  try {
    const [first] = certificatesOf(bundle);
    if (!first?.ca || !first.checkPrivateKey(createPrivateKey(key))) return undefined;
    return { cert: first.toString(), key };
  } catch {
    return undefined;
  }
}

function authorityOutlives(cert: string, validUntil: number, now: number): boolean {
  const x509 = new X509Certificate(cert);
  return !inRenewalWindow(x509, now) && Date.parse(x509.validTo) > validUntil;
}
