/*
 * Regenerates libs/api/crds/*.yaml from the field description in libs/api/src/crd/v1alpha1-schemas.ts and
 * Kubernetes' own OpenAPI document for the embedded core types. Run: npm run generate:crds
 */
import { readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateCrdFiles } from '../src/crd/generate';
import { loadKubernetesOpenApi, locateKubernetesOpenApi } from '../src/crd/kubernetes-openapi';

const CRD_DIR = join(__dirname, '..', 'crds');

function main(): void {
  const source = locateKubernetesOpenApi();
  const files = generateCrdFiles(loadKubernetesOpenApi(source));
  for (const stale of readdirSync(CRD_DIR).filter((f) => f.endsWith('.yaml') && !files.has(f))) {
    unlinkSync(join(CRD_DIR, stale));
    process.stdout.write(`removed ${stale}\n`);
  }
  for (const [name, content] of files) {
    writeFileSync(join(CRD_DIR, name), content);
    process.stdout.write(`wrote ${name} (${Math.round(content.length / 1024)} KiB)\n`);
  }
  process.stdout.write(`core schemas from ${source}\n`);
}

main();
