/*
 * Compares ARO's CRDs with upstream ARC's, field by field, for a team about to switch a cluster (or to
 * run upstream's controller against ARO's CRDs): every field path of upstream's openAPIV3Schema, with
 * its type, required list, int-or-string and preserve-unknown-fields markers, enum, default and CEL
 * rules, and the
 * printer columns and subresources of each version. Upstream's CRDs are not in this repository (they
 * are upstream's generated files); point the script at a checkout of actions/actions-runner-controller:
 *
 *   npm run compare:crds -- <arc checkout>/config/crd/bases
 *
 * It prints what upstream has that ARO lacks (MISSING: an upstream manifest could lose that field to
 * pruning), what ARO adds (EXTRA), and what differs (DIFFERS), and exits 1 when anything is MISSING.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';

interface Schema {
  type?: string;
  required?: string[];
  enum?: unknown[];
  default?: unknown;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-validations'?: unknown[];
}

interface CrdVersion {
  name: string;
  schema: { openAPIV3Schema: Schema };
  subresources?: unknown;
  additionalPrinterColumns?: unknown;
}

interface Crd {
  kind: string;
  metadata: { name: string };
  spec: { versions: CrdVersion[] };
}

/** Every field path of a schema with what a manifest's fate depends on. */
function fieldPaths(schema: Schema, path = '', out = new Map<string, string>()): Map<string, string> {
  out.set(
    path || '(root)',
    JSON.stringify({
      type: schema.type,
      required: [...(schema.required ?? [])].sort(),
      intOrString: schema['x-kubernetes-int-or-string'] ?? false,
      preserveUnknown: schema['x-kubernetes-preserve-unknown-fields'] ?? false,
      enum: schema.enum,
      default: schema.default,
      validations: schema['x-kubernetes-validations'],
    }),
  );
  for (const [key, child] of Object.entries(schema.properties ?? {}))
    fieldPaths(child, `${path}.${key}`, out);
  if (schema.items) fieldPaths(schema.items, `${path}[]`, out);
  if (typeof schema.additionalProperties === 'object')
    fieldPaths(schema.additionalProperties, `${path}{}`, out);
  return out;
}

function crdsIn(dir: string): Map<string, Crd> {
  const crds = new Map<string, Crd>();
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    for (const doc of loadAllYaml(readFileSync(join(dir, file), 'utf8')) as Crd[]) {
      if (doc?.kind === 'CustomResourceDefinition') crds.set(doc.metadata.name, doc);
    }
  }
  return crds;
}

function main(): number {
  const upstreamDir = process.argv[2];
  if (!upstreamDir) {
    process.stderr.write(
      'usage: npm run compare:crds -- <actions-runner-controller checkout>/config/crd/bases\n',
    );
    return 2;
  }
  const ours = crdsIn(join(__dirname, '..', 'crds'));
  const upstream = crdsIn(upstreamDir);
  let missing = 0;
  for (const [name, theirs] of upstream) {
    if (!name.endsWith('.actions.github.com') || !/^(autoscaling|ephemeral)/.test(name)) continue;
    const mine = ours.get(name);
    if (!mine) {
      process.stdout.write(`MISSING CRD ${name}\n`);
      missing++;
      continue;
    }
    for (const version of theirs.spec.versions) {
      const counterpart = mine.spec.versions.find((v) => v.name === version.name);
      if (!counterpart) {
        process.stdout.write(`MISSING ${name} version ${version.name}\n`);
        missing++;
        continue;
      }
      const a = fieldPaths(version.schema.openAPIV3Schema);
      const b = fieldPaths(counterpart.schema.openAPIV3Schema);
      const lacking = [...a.keys()].filter((p) => !b.has(p));
      const extra = [...b.keys()].filter((p) => !a.has(p));
      const differing = [...a.keys()].filter((p) => b.has(p) && a.get(p) !== b.get(p));
      missing += lacking.length;
      process.stdout.write(
        `${name} ${version.name}: upstream ${a.size} fields, ARO ${b.size}; ` +
          `missing ${lacking.length}, extra ${extra.length}, differing ${differing.length}\n`,
      );
      for (const p of lacking) process.stdout.write(`  MISSING  ${p}\n`);
      for (const p of extra) process.stdout.write(`  EXTRA    ${p}\n`);
      for (const p of differing)
        process.stdout.write(`  DIFFERS  ${p}: upstream ${a.get(p)}, ARO ${b.get(p)}\n`);
      const same = (x: unknown, y: unknown): boolean => JSON.stringify(x) === JSON.stringify(y);
      if (!same(version.subresources, counterpart.subresources))
        process.stdout.write('  DIFFERS  subresources\n');
      if (!same(version.additionalPrinterColumns, counterpart.additionalPrinterColumns)) {
        process.stdout.write('  DIFFERS  printer columns\n');
      }
    }
  }
  return missing > 0 ? 1 : 0;
}

process.exitCode = main();
