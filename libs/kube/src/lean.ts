/*
 * @aro/kube/lean: the Kubernetes client (lean kubeconfig loader included), merge patches, the clock and
 * the token bucket, without informers, controllers, the manager, leader election or KubeModule (which
 * load @nestjs/common and rxjs). For a process that only patches, such as the per-pod listener;
 * everything else imports @aro/kube.
 */
export * from './client';
export * from './patch';
export { type Clock, type TimerHandle, sleep, systemClock } from './queue/clock';
export * from './queue/rate-limiter';
