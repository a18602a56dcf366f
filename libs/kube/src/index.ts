export * from './client';
export * from './cache';
export * from './patch';
export * from './queue';
export * from './controller';
export * from './manager';
export * from './leaderelection';
export * from './finalizer';
export { KUBE_MODULE_OPTIONS, KubeModule, type KubeModuleOptions } from './kube.module';
