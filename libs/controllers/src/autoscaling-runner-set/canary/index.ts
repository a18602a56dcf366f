export { CanaryRollout, type CanaryStep, imageOf, isCanarySet } from './canary-rollout';
export { CanaryMetrics } from './canary-metrics';
export {
  judgeCanary,
  evidenceOf,
  describeEvidence,
  type CanaryEvidence,
  type CanaryVerdict,
} from './decision';
