export * from './lean';
export { crdManifests, crdManifestPaths, CRD_DIRECTORY } from './crd/crd-manifests';
export { ApiModule } from './api.module';
export * from './v1alpha1/upstream-compat';
