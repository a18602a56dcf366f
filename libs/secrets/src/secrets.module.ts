import {
  ConfigurableModuleBuilder,
  Global,
  Inject,
  Injectable,
  InjectionToken,
  Module,
  ModuleMetadata,
  OnModuleInit,
  Optional,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { MultiClient } from '@aro/actions';
import { KubeClient } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { AzureKeyVaultSource } from './azure-key-vault/azure-key-vault-source';
import type { AzureKeyVaultOptions } from './azure-key-vault/azure-key-vault-options';
import { CREDENTIAL_SOURCES, CredentialSource } from './credential-source';
import { KubernetesSecretSource } from './kubernetes-secret-source';
import { SecretResolver } from './secret-resolver';

export interface SecretsModuleOptions {
  /** Upper bound on one resolution; 30 s by default. */
  timeoutMs?: number;
  /** How the built-in Azure Key Vault source (`vaultConfig.type: azure_key_vault`) reaches Azure. */
  azureKeyVault?: AzureKeyVaultOptions;
}

/** Given to forRoot/forRootAsync beside the options: they shape the module's providers. */
export interface SecretsModuleExtras {
  /** Modules providing the `extraSources` (when the app does not import them already). */
  imports?: ModuleMetadata['imports'];
  /**
   * Tokens of extra credential sources, consulted in this order after the discovered ones and before
   * the Kubernetes Secret source. Marking the provider with {@link CredentialSourceProvider} does the
   * same without this list.
   */
  extraSources?: InjectionToken<CredentialSource>[];
}

export const {
  ConfigurableModuleClass: SecretsConfigurableModule,
  MODULE_OPTIONS_TOKEN: SECRETS_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<SecretsModuleOptions>({ moduleName: 'Secrets' })
  .setClassMethodName('forRoot')
  .setExtras<SecretsModuleExtras>({ imports: [], extraSources: [] }, (definition, extras) => ({
    ...definition,
    imports: [...(definition.imports ?? []), ...(extras.imports ?? [])],
    providers: [
      ...(definition.providers ?? []),
      {
        // The listed sources, then the built-in ones (Azure Key Vault, Kubernetes Secrets); the
        // discovered ones are put first at module init, so a platform may serve azure_key_vault itself.
        provide: CREDENTIAL_SOURCES,
        inject: [...(extras.extraSources ?? []), AzureKeyVaultSource, KubernetesSecretSource],
        useFactory: (...sources: CredentialSource[]): CredentialSource[] => sources,
      },
    ],
  }))
  .build();

/**
 * Marks a Nest provider as a credential source: the SecretsModule finds every provider so marked in
 * the app's modules and consults them, in discovery order, before the Kubernetes Secret source. A
 * platform team serves GitHub credentials from its vault (or a mounted file) by importing one module.
 */
export const CredentialSourceProvider = DiscoveryService.createDecorator<void>();

function isCredentialSource(value: unknown): value is CredentialSource {
  const source = value as Partial<CredentialSource> | undefined;
  return typeof source?.handles === 'function' && typeof source.getCredentials === 'function';
}

/**
 * Puts the discovered sources at the head of the list the resolver consults, at module init: only
 * then are the providers of every module (extensions included) instantiated. The resolver holds the
 * same array, and nothing resolves before init (the manager starts after it), so it never sees a
 * partial list.
 */
@Injectable()
class CredentialSourceDiscovery implements OnModuleInit {
  constructor(
    @Inject(CREDENTIAL_SOURCES) private readonly sources: CredentialSource[],
    private readonly discovery: DiscoveryService,
    @Optional() @Inject(LOGGER) private readonly logger?: Logger,
  ) {}

  onModuleInit(): void {
    const discovered = this.discovery
      .getProviders({ metadataKey: CredentialSourceProvider.KEY })
      .map((wrapper) => wrapper.instance as unknown);
    const invalid = discovered.filter((s) => !isCredentialSource(s));
    if (invalid.length > 0) {
      throw new Error(
        `@CredentialSourceProvider() marks a provider that is no CredentialSource (needs handles and getCredentials): ${invalid
          .map((s) => (s as object | undefined)?.constructor?.name ?? String(s))
          .join(', ')}`,
      );
    }
    const fresh = (discovered as CredentialSource[]).filter(
      (s, i) => !this.sources.includes(s) && discovered.indexOf(s) === i,
    );
    this.sources.unshift(...fresh);
    this.logger?.info('Credential sources', { sources: this.sources.map((s) => s.name) });
  }
}

/**
 * Provides the {@link SecretResolver} (GitHub configuration of a runner, set or listener → an Actions
 * client), the {@link KubernetesSecretSource}, and the ordered source list under
 * {@link CREDENTIAL_SOURCES}: sources marked {@link CredentialSourceProvider}, then `extraSources`,
 * then Azure Key Vault, then Kubernetes Secrets. Global; needs KubeClient (KubeModule) and MultiClient (ActionsModule).
 */
@Global()
@Module({
  imports: [DiscoveryModule],
  providers: [
    {
      provide: KubernetesSecretSource,
      inject: [KubeClient],
      useFactory: (kube: KubeClient) => new KubernetesSecretSource(kube),
    },
    {
      provide: AzureKeyVaultSource,
      inject: [KubeClient, SECRETS_MODULE_OPTIONS],
      useFactory: (kube: KubeClient, opts: SecretsModuleOptions) =>
        new AzureKeyVaultSource(kube, opts.azureKeyVault),
    },
    {
      provide: SecretResolver,
      inject: [
        SECRETS_MODULE_OPTIONS,
        KubeClient,
        MultiClient,
        CREDENTIAL_SOURCES,
        { token: LOGGER, optional: true },
      ],
      useFactory: (
        opts: SecretsModuleOptions,
        kube: KubeClient,
        multiClient: MultiClient,
        sources: CredentialSource[],
        logger: Logger | undefined,
      ) =>
        new SecretResolver({
          kube,
          multiClient,
          sources,
          logger: logger?.child({ component: 'secret-resolver' }),
          timeoutMs: opts.timeoutMs,
        }),
    },
    CredentialSourceDiscovery,
  ],
  exports: [SecretResolver, CREDENTIAL_SOURCES, KubernetesSecretSource, AzureKeyVaultSource],
})
export class SecretsModule extends SecretsConfigurableModule {}
