import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';

/**
 * libs/api/crds: beside the sources when running from the repo, otherwise the nearest ancestor holding
 * libs/api/crds (a compiled dist/ tree does not copy the YAML files). `ARO_CRD_DIR` overrides both.
 */
function findCrdDirectory(): string {
  if (process.env.ARO_CRD_DIR) return process.env.ARO_CRD_DIR;
  const beside = join(__dirname, '..', '..', 'crds');
  if (existsSync(beside)) return beside;
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'libs', 'api', 'crds');
    if (existsSync(candidate)) return candidate;
  }
  return beside;
}

export const CRD_DIRECTORY = findCrdDirectory();

/**
 * The committed CRD manifests, as client-node model objects: hand them to ApiextensionsV1Api as they are.
 * Do not build CRDs for client-node from plain JSON: its serializer drops `x-kubernetes-*` keys it cannot
 * map to model properties, and the apiserver would then refuse the schema.
 */
export async function crdManifests(directory = CRD_DIRECTORY): Promise<V1CustomResourceDefinition[]> {
  // Loaded here, not at the top: this module is in @aro/api's barrel, and client-node holds ~30 MiB
  // in every process that imports it, which the controller (which never reads CRD files) must not pay.
  const { loadYaml } = await import('@kubernetes/client-node');
  const files = readdirSync(directory)
    .filter((name) => name.endsWith('.yaml'))
    .sort();
  if (files.length === 0) throw new Error(`no CRD manifests (*.yaml) in ${directory}`);
  return files.map((name) => {
    const path = join(directory, name);
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(path, 'utf8'));
    if (crd.kind !== 'CustomResourceDefinition') throw new Error(`${path} is not a CustomResourceDefinition`);
    return crd;
  });
}

/** Paths of the committed CRD files, for tools that apply them as files (kubectl, the test harness). */
export function crdManifestPaths(directory = CRD_DIRECTORY): string[] {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => join(directory, name));
}
