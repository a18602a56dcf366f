export {
  EVICTION_REFUSED_CODE,
  type AdmissionRequest,
  type AdmissionResponse,
  type AdmissionReview,
} from './admission-review';
export { EvictionAdmission, REASON_RUNNER_EVICTION_ADMITTED } from './eviction-admission';
export {
  EVICTION_WEBHOOK_MODULE_OPTIONS,
  EvictionWebhookLifecycle,
  EvictionWebhookModule,
  type EvictionWebhookModuleOptions,
} from './eviction-webhook.module';
export { EVICTION_WEBHOOK_PATH, EvictionWebhookServer } from './webhook-server';
export {
  ValidatingWebhookConfigurationKind,
  WEBHOOK_SECRET_KEYS,
  WebhookCertificate,
  type WebhookCertificateOptions,
  type WebhookConfiguration,
} from './webhook-certificate';
