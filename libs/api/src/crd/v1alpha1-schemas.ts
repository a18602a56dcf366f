import type {
  AutoscalingListener,
  AutoscalingListenerSpec,
  AutoscalingListenerStatus,
} from '../v1alpha1/autoscaling-listener-types';
import type { ScaleSetCondition } from '../v1alpha1/scale-set';
import type {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetPhase,
  AutoscalingRunnerSetSpec,
  AutoscalingRunnerSetStatus,
  OrphanSweepAudit,
} from '../v1alpha1/autoscaling-runner-set-types';
import type {
  EphemeralRunner,
  EphemeralRunnerPhase,
  EphemeralRunnerSpec,
  EphemeralRunnerStatus,
} from '../v1alpha1/ephemeral-runner-types';
import type {
  EphemeralRunnerSet,
  EphemeralRunnerSetPhase,
  EphemeralRunnerSetSpec,
  EphemeralRunnerSetStatus,
} from '../v1alpha1/ephemeral-runner-set-types';
import {
  AutoscalingListenerKind,
  AutoscalingRunnerSetKind,
  EphemeralRunnerKind,
  EphemeralRunnerSetKind,
} from '../v1alpha1/kinds';
import type { ResourceKind } from '../resource-kind';
import type {
  AzureKeyVaultConfig,
  CounterMetric,
  GaugeMetric,
  HistogramMetric,
  MetricsConfig,
  ProxyConfig,
  ProxyServerConfig,
  ResourceMeta,
  TLSCertificateSource,
  TLSConfig,
  VaultConfig,
} from '../v1alpha1/shared-types';
import { Schema, optional, optionalInCrd, required, t } from './schema-dsl';

/*
 * The single description of the v1alpha1 fields the CRD manifests are generated from. Field names, types
 * and required lists follow upstream ARC's controller-gen output; each object is typed against the
 * interface the code uses, so the two cannot drift apart silently.
 */

const resourceMeta = t.object<ResourceMeta>(
  {
    labels: optional(t.map(t.string())),
    annotations: optional(t.map(t.string())),
  },
  'ResourceMeta carries metadata common to all internal resources',
);

const tlsConfig = t.object<TLSConfig>({
  certificateFrom: required(
    t.object<TLSCertificateSource>({
      configMapKeyRef: required(t.core('io.k8s.api.core.v1.ConfigMapKeySelector')),
    }),
  ),
});

const proxyServerConfig = t.object<ProxyServerConfig>({
  url: required(t.string()),
  credentialSecretRef: optional(t.string(), 'Secret with username and password keys for the proxy.'),
});

const proxyConfig = t.object<ProxyConfig>({
  http: optional(proxyServerConfig),
  https: optional(proxyServerConfig),
  noProxy: optional(t.array(t.string())),
});

const vaultConfig = t.object<VaultConfig>({
  type: optional(
    t.string(),
    'Vault to resolve secrets from: azure_key_vault, or empty for Kubernetes Secrets.',
  ),
  azureKeyVault: optional(
    t.object<AzureKeyVaultConfig>({
      url: required(t.string()),
      tenantId: required(t.string()),
      clientId: required(t.string()),
      certificatePath: required(t.string()),
    }),
  ),
  proxy: optional(proxyConfig),
});

const labelsOnly = { labels: required(t.array(t.string())) };

const metricsConfig = t.object<MetricsConfig>(
  {
    counters: optional(t.map(t.object<CounterMetric>(labelsOnly))),
    gauges: optional(t.map(t.object<GaugeMetric>(labelsOnly))),
    histograms: optional(
      t.map(
        t.object<HistogramMetric>({
          labels: required(t.array(t.string())),
          buckets: optional(t.array(t.float())),
        }),
      ),
    ),
  },
  'MetricsConfig holds configuration parameters for each metric type',
);

const podTemplateSpec = t.core('io.k8s.api.core.v1.PodTemplateSpec');

const ephemeralRunnerSpec = t.object<EphemeralRunnerSpec>(
  {
    githubConfigUrl: required(t.string()),
    githubConfigSecret: required(t.string()),
    githubServerTLS: optional(tlsConfig),
    runnerScaleSetId: required(t.int()),
    proxy: optional(proxyConfig),
    proxySecretRef: optional(t.string()),
    vaultConfig: optional(vaultConfig),
    ephemeralRunnerConfigSecretMetadata: optional(resourceMeta),
    metadata: optional(t.embeddedObjectMeta()),
    spec: optional(t.core('io.k8s.api.core.v1.PodSpec')),
  },
  'EphemeralRunnerSpec defines the desired state of EphemeralRunner',
);

const ephemeralRunnerStatus = t.object<EphemeralRunnerStatus>(
  {
    ready: optional(t.boolean(), 'Turns true only if the runner is online.'),
    phase: optional(t.stringOf<EphemeralRunnerPhase>(), 'Pending, Running, Succeeded, Failed or Outdated.'),
    reason: optional(t.string()),
    message: optional(t.string()),
    runnerId: optional(t.int()),
    runnerName: optional(t.string()),
    failures: optional(t.map(t.dateTime())),
    jobRequestId: optional(t.int64()),
    jobId: optional(t.string()),
    jobRepositoryName: optional(t.string()),
    jobWorkflowRef: optional(t.string()),
    workflowRunId: optional(t.int64()),
    jobDisplayName: optional(t.string()),
  },
  'EphemeralRunnerStatus defines the observed state of EphemeralRunner',
);

const ephemeralRunnerSetSpec = t.object<EphemeralRunnerSetSpec>(
  {
    replicas: optional(t.int()),
    patchID: required(t.int(), 'Identifies the latest patch issued by the listener app.'),
    ephemeralRunnerSpec: optionalInCrd(ephemeralRunnerSpec),
    ephemeralRunnerMetadata: optional(resourceMeta),
  },
  'EphemeralRunnerSetSpec defines the desired state of EphemeralRunnerSet',
);

// ARO: metav1.Condition's fields; the conditions are additions upstream does not write or read.
const condition = t.object<ScaleSetCondition>({
  type: required(t.string()),
  status: required(t.stringOf<ScaleSetCondition['status']>(), 'True, False or Unknown.'),
  reason: required(t.string()),
  message: required(t.string()),
  lastTransitionTime: required(t.dateTime()),
  observedGeneration: optional(t.int64()),
});

const ephemeralRunnerSetStatus = t.object<EphemeralRunnerSetStatus>(
  {
    currentReplicas: required(t.int()),
    pendingEphemeralRunners: optional(t.int()),
    runningEphemeralRunners: optional(t.int()),
    failedEphemeralRunners: optional(t.int()),
    phase: optional(t.stringOf<EphemeralRunnerSetPhase>(), 'Running, or Outdated once a runner is Outdated.'),
    conditions: optional(t.array(condition), 'ARO: why the set is in its phase.'),
  },
  'EphemeralRunnerSetStatus defines the observed state of EphemeralRunnerSet',
);

const autoscalingRunnerSetSpec = t.object<AutoscalingRunnerSetSpec>(
  {
    githubConfigUrl: optional(t.string()),
    githubConfigSecret: optional(t.string()),
    runnerGroup: optional(t.string()),
    runnerScaleSetName: optional(t.string()),
    runnerScaleSetLabels: optional(t.array(t.string())),
    proxy: optional(proxyConfig),
    githubServerTLS: optional(tlsConfig),
    vaultConfig: optional(vaultConfig),
    template: optional(podTemplateSpec),
    autoscalingListener: optional(resourceMeta),
    listenerMetrics: optional(metricsConfig),
    listenerTemplate: optional(podTemplateSpec),
    listenerServiceAccountMetadata: optional(resourceMeta),
    listenerRoleMetadata: optional(resourceMeta),
    listenerRoleBindingMetadata: optional(resourceMeta),
    listenerConfigSecretMetadata: optional(resourceMeta),
    ephemeralRunnerSetMetadata: optional(resourceMeta),
    ephemeralRunnerMetadata: optional(resourceMeta),
    ephemeralRunnerConfigSecretMetadata: optional(resourceMeta),
    maxRunners: optional(t.int({ minimum: 0 })),
    minRunners: optional(t.int({ minimum: 0 })),
  },
  'AutoscalingRunnerSetSpec defines the desired state of AutoscalingRunnerSet',
  {
    // ARO: upstream's CRD accepts it and its listener then refuses its config, so the listener pod
    // fails over and over with the reason in its log only. Refused here, at `kubectl apply`.
    validations: [
      {
        rule: '!has(self.minRunners) || !has(self.maxRunners) || self.minRunners <= self.maxRunners',
        message: 'minRunners must be less than or equal to maxRunners',
        fieldPath: '.minRunners',
      },
      // ARO: the JIT configuration goes to the container named `runner`; without one the pods would
      // start, never take a job and be replaced for ever.
      {
        rule: "!has(self.template) || !has(self.template.spec) || self.template.spec.containers.exists(c, c.name == 'runner')",
        message: "the runner pod template needs a container named 'runner'",
        fieldPath: '.template.spec.containers',
      },
    ],
  },
);

const orphanSweepAudit = t.object<OrphanSweepAudit>(
  {
    lastPassTime: optional(t.dateTime(), 'The sweep pass this audit comes from; refreshed at least hourly.'),
    registrations: optional(t.int(), 'Runner registrations the Actions service lists for the scale set.'),
    runners: optional(t.int(), 'EphemeralRunners on the scale set that hold a registration.'),
    orphans: optional(t.int(), 'Registrations seen without an EphemeralRunner in the last pass.'),
    orphansRemoved: optional(t.int(), 'Orphaned registrations queued for removal, all passes together.'),
  },
  'OrphanSweepAudit is what the orphan registration sweep last saw',
);

const autoscalingRunnerSetStatus = t.object<AutoscalingRunnerSetStatus>(
  {
    currentRunners: optional(t.int()),
    phase: optional(t.stringOf<AutoscalingRunnerSetPhase>()),
    pendingEphemeralRunners: optional(t.int()),
    runningEphemeralRunners: optional(t.int()),
    failedEphemeralRunners: optional(t.int()),
    conditions: optional(
      t.array(condition),
      'ARO: the scale set on the Actions service and the runner version.',
    ),
    orphanSweep: optional(
      orphanSweepAudit,
      "ARO: the leak audit, what the leader's orphan registration sweep last saw for this scale set.",
    ),
  },
  'AutoscalingRunnerSetStatus defines the observed state of AutoscalingRunnerSet',
);

const autoscalingListenerSpec = t.object<AutoscalingListenerSpec>(
  {
    githubConfigUrl: optional(t.string()),
    githubConfigSecret: optional(t.string()),
    runnerScaleSetId: optional(t.int()),
    autoscalingRunnerSetNamespace: optional(t.string()),
    autoscalingRunnerSetName: optional(t.string()),
    ephemeralRunnerSetName: optional(t.string()),
    maxRunners: optional(t.int({ minimum: 0 })),
    minRunners: optional(t.int({ minimum: 0 })),
    image: optional(t.string()),
    imagePullSecrets: optional(t.array(t.core('io.k8s.api.core.v1.LocalObjectReference'))),
    proxy: optional(proxyConfig),
    githubServerTLS: optional(tlsConfig),
    vaultConfig: optional(vaultConfig),
    metrics: optional(metricsConfig),
    template: optional(podTemplateSpec),
    configSecretMetadata: optional(resourceMeta),
    serviceAccountMetadata: optional(resourceMeta),
    roleMetadata: optional(resourceMeta),
    roleBindingMetadata: optional(resourceMeta),
  },
  'AutoscalingListenerSpec defines the desired state of AutoscalingListener',
);

export interface PrinterColumn {
  readonly name: string;
  readonly type: 'string' | 'integer' | 'number' | 'date' | 'boolean';
  readonly jsonPath: string;
}

type SpecOf<T> = T extends { spec: infer S } ? S : never;
type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : never;

export interface KindSchema<T> {
  readonly kind: ResourceKind;
  readonly singular: string;
  readonly listKind: string;
  readonly description: string;
  readonly printerColumns: readonly PrinterColumn[];
  readonly spec: Schema<SpecOf<T>>;
  readonly status: Schema<StatusOf<T>>;
}

const col = (name: string, jsonPath: string, type: PrinterColumn['type'] = 'string'): PrinterColumn => ({
  name,
  jsonPath,
  type,
});

export const autoscalingRunnerSetSchema: KindSchema<AutoscalingRunnerSet> = {
  kind: AutoscalingRunnerSetKind,
  singular: 'autoscalingrunnerset',
  listKind: 'AutoscalingRunnerSetList',
  description: 'AutoscalingRunnerSet is the Schema for the autoscalingrunnersets API',
  // Finished/Deleting point at status fields that do not exist: upstream keeps them, so do we.
  printerColumns: [
    col('Minimum Runners', '.spec.minRunners', 'integer'),
    col('Maximum Runners', '.spec.maxRunners', 'integer'),
    col('Current Runners', '.status.currentRunners', 'integer'),
    col('Phase', '.status.phase'),
    col('Pending Runners', '.status.pendingEphemeralRunners', 'integer'),
    col('Running Runners', '.status.runningEphemeralRunners', 'integer'),
    col('Finished Runners', '.status.finishedEphemeralRunners', 'integer'),
    col('Deleting Runners', '.status.deletingEphemeralRunners', 'integer'),
    // ARO: the state of a canary roll-out (the CanaryRollout condition's reason); empty without one.
    col('Canary', '.status.conditions[?(@.type=="CanaryRollout")].reason'),
  ],
  spec: autoscalingRunnerSetSpec,
  status: autoscalingRunnerSetStatus,
};

export const ephemeralRunnerSetSchema: KindSchema<EphemeralRunnerSet> = {
  kind: EphemeralRunnerSetKind,
  singular: 'ephemeralrunnerset',
  listKind: 'EphemeralRunnerSetList',
  description: 'EphemeralRunnerSet is the Schema for the ephemeralrunnersets API',
  printerColumns: [
    col('DesiredReplicas', '.spec.replicas', 'integer'),
    col('CurrentReplicas', '.status.currentReplicas', 'integer'),
    col('Pending Runners', '.status.pendingEphemeralRunners', 'integer'),
    col('Running Runners', '.status.runningEphemeralRunners', 'integer'),
    col('Finished Runners', '.status.finishedEphemeralRunners', 'integer'),
    col('Deleting Runners', '.status.deletingEphemeralRunners', 'integer'),
    col('Phase', '.status.phase'),
  ],
  spec: ephemeralRunnerSetSpec,
  status: ephemeralRunnerSetStatus,
};

export const ephemeralRunnerSchema: KindSchema<EphemeralRunner> = {
  kind: EphemeralRunnerKind,
  singular: 'ephemeralrunner',
  listKind: 'EphemeralRunnerList',
  description: 'EphemeralRunner is the Schema for the ephemeralrunners API',
  printerColumns: [
    col('GitHub Config URL', '.spec.githubConfigUrl'),
    col('RunnerId', '.status.runnerId', 'number'),
    col('Phase', '.status.phase'),
    col('JobRepository', '.status.jobRepositoryName'),
    col('JobWorkflowRef', '.status.jobWorkflowRef'),
    col('WorkflowRunId', '.status.workflowRunId', 'number'),
    col('JobDisplayName', '.status.jobDisplayName'),
    col('JobId', '.status.jobId'),
    col('Message', '.status.message'),
    col('Age', '.metadata.creationTimestamp', 'date'),
  ],
  spec: ephemeralRunnerSpec,
  status: ephemeralRunnerStatus,
};

export const autoscalingListenerSchema: KindSchema<AutoscalingListener> = {
  kind: AutoscalingListenerKind,
  singular: 'autoscalinglistener',
  listKind: 'AutoscalingListenerList',
  description: 'AutoscalingListener is the Schema for the autoscalinglisteners API',
  printerColumns: [
    col('GitHub Configure URL', '.spec.githubConfigUrl'),
    col('AutoscalingRunnerSet Namespace', '.spec.autoscalingRunnerSetNamespace'),
    col('AutoscalingRunnerSet Name', '.spec.autoscalingRunnerSetName'),
  ],
  spec: autoscalingListenerSpec,
  status: t.object<AutoscalingListenerStatus>(
    {
      restarts: optional(t.int(), 'ARO: listener pod recreations in a row without reaching Running.'),
      reason: optional(t.string(), 'ARO: why the listener pod was last recreated.'),
      message: optional(t.string()),
      lastRestartTime: optional(t.dateTime()),
      conditions: optional(t.array(condition)),
    },
    'AutoscalingListenerStatus defines the observed state of AutoscalingListener',
  ),
};

/** Every kind's schema, in the order the CRD files are generated. */
export const v1alpha1Schemas = [
  autoscalingRunnerSetSchema,
  ephemeralRunnerSetSchema,
  ephemeralRunnerSchema,
  autoscalingListenerSchema,
] as const;
