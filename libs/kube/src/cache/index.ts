export { Informer, type InformerEvent, type InformerEventHandler, type InformerOptions } from './informer';
export { InformerCache, type InformerCacheOptions } from './informer-cache';
export { CONTROLLING_OWNER_INDEX, controllingOwnerKey, controllingOwnerIndex } from './indexes';
export { parseLabelSelector, parseFieldSelector, type LabelMatcher } from './selectors';
export { NamespacedInformers, type CacheInformer } from './namespaced-informers';
export { WATCH_MODULE_OPTIONS, WatchModule, type WatchModuleOptions } from './watch.module';
