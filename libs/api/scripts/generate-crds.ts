/*
 * Regenerates libs/api/crds/*.yaml (and the Helm chart's copy, charts/aro-controller/crds, which Helm
 * installs from there and a test keeps identical) from the field description in libs/api/src/crd/v1alpha1-schemas.ts and
 * Kubernetes' own OpenAPI document for the embedded core types. Run: npm run generate:crds
 */
import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCrdFiles } from '../src/crd/generate';
import { loadKubernetesOpenApi, locateKubernetesOpenApi } from '../src/crd/kubernetes-openapi';

const CRD_DIRS = [
  join(__dirname, '..', 'crds'),
  join(__dirname, '..', '..', '..', 'charts', 'aro-controller', 'crds'),
];

function main(): void {
  const source = locateKubernetesOpenApi();
  const files = generateCrdFiles(loadKubernetesOpenApi(source));
  for (const dir of CRD_DIRS) {
    for (const stale of readdirSync(dir).filter((f) => f.endsWith('.yaml') && !files.has(f))) {
      unlinkSync(join(dir, stale));
      process.stdout.write(`removed ${join(dir, stale)}\n`);
    }
    for (const [name, content] of files) {
      writeFileSync(join(dir, name), content);
      process.stdout.write(`wrote ${join(dir, name)} (${Math.round(content.length / 1024)} KiB)\n`);
    }
  }
  process.stdout.write(`core schemas from ${source}\n`);
}

main();
