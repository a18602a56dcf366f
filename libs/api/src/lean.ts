/*
 * @aro/api/lean: the types, constants and helpers without ApiModule (which loads @nestjs/common and
 * rxjs) and without the CRD manifests. For code that runs outside Nest, such as the per-pod listener
 * and the Kubernetes client in @aro/kube/lean; everything else imports @aro/api.
 */
export { type ResourceKind, apiVersionOf } from './resource-kind';
export * from './v1alpha1/shared-types';
export * from './v1alpha1/ephemeral-runner-types';
export * from './v1alpha1/ephemeral-runner-set-types';
export * from './v1alpha1/autoscaling-runner-set-types';
export * from './v1alpha1/autoscaling-listener-types';
export * from './v1alpha1/kinds';
export * from './v1alpha1/constants';
export * from './v1alpha1/helpers';
export * from './v1alpha1/listener-config';
export * from './v1alpha1/canary';
export * from './v1alpha1/scale-set';
