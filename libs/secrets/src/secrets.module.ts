import { DynamicModule, InjectionToken, Module, ModuleMetadata } from '@nestjs/common';
import { MultiClient } from '@aro/actions';
import { KubeClient } from '@aro/kube';
import { LOGGER, Logger } from '@aro/observability';
import { CREDENTIAL_SOURCES, CredentialSource } from './credential-source';
import { KubernetesSecretSource } from './kubernetes-secret-source';
import { SecretResolver } from './secret-resolver';

export interface SecretsModuleOptions {
  /**
   * Modules that provide the extra sources (a platform team's vault module), and, when they are not
   * global, the modules providing KubeClient and MultiClient.
   */
  imports?: ModuleMetadata['imports'];
  /**
   * Tokens of extra credential sources, consulted in this order before the Kubernetes Secret source.
   * Each must be provided by a module in `imports`.
   */
  extraSources?: InjectionToken<CredentialSource>[];
  /** Upper bound on one resolution; 30 s by default. */
  timeoutMs?: number;
}

/**
 * Provides {@link SecretResolver}, {@link KubernetesSecretSource} and the ordered source list under
 * {@link CREDENTIAL_SOURCES}. Needs KubeClient and MultiClient from the surrounding application and
 * uses the LOGGER of ObservabilityModule when present.
 */
@Module({})
export class SecretsModule {
  static forRoot(opts: SecretsModuleOptions = {}): DynamicModule {
    const extraSources = opts.extraSources ?? [];
    return {
      module: SecretsModule,
      imports: opts.imports ?? [],
      providers: [
        {
          provide: KubernetesSecretSource,
          useFactory: (kube: KubeClient) => new KubernetesSecretSource(kube),
          inject: [KubeClient],
        },
        {
          provide: CREDENTIAL_SOURCES,
          useFactory: (...sources: CredentialSource[]): CredentialSource[] => sources,
          inject: [...extraSources, KubernetesSecretSource],
        },
        {
          provide: SecretResolver,
          useFactory: (
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
          inject: [KubeClient, MultiClient, CREDENTIAL_SOURCES, { token: LOGGER, optional: true }],
        },
      ],
      exports: [SecretResolver, CREDENTIAL_SOURCES, KubernetesSecretSource],
    };
  }
}
