/*
 * Compares ARO's CRDs with upstream ARC's, field by field, for a team about to switch a cluster (or to
 * run upstream's controller against ARO's CRDs): every field path of upstream's openAPIV3Schema, with
 * what decides a manifest's fate there (type, required list, enum, default, format and bounds, CEL rules,
 * the int-or-string, preserve-unknown-fields, embedded-resource, list-type, list-map-keys and map-type
 * markers), and the printer columns and subresources of each version. Upstream's CRDs are not in this
 * repository (they are upstream's generated files); point the script at a checkout of
 * actions/actions-runner-controller:
 *
 *   npm run compare:crds -- <arc checkout>/config/crd/bases
 *
 * It prints what upstream has that ARO lacks (MISSING: an upstream manifest could lose that field to
 * pruning), what ARO adds (EXTRA), and what differs (DIFFERS), and exits 1 when anything is MISSING.
 *
 * The manifests are read as client-node's models (loadAllYaml), whose property names are not the wire
 * names: `x-kubernetes-validations` is `x_kubernetes_validations`, `enum` is `_enum`. Every keyword is
 * read through the typed V1JSONSchemaProps, so a misspelt one does not compile instead of reading
 * `undefined` on both sides and hiding a difference.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';

/** What a manifest's fate at one field path depends on, keyed by the wire name of each keyword. */
function keywordsOf(schema: V1JSONSchemaProps): Record<string, unknown> {
  return {
    type: schema.type,
    required: [...(schema.required ?? [])].sort(),
    enum: schema._enum,
    default: schema._default,
    format: schema.format,
    pattern: schema.pattern,
    minimum: schema.minimum,
    maximum: schema.maximum,
    minLength: schema.minLength,
    maxLength: schema.maxLength,
    minItems: schema.minItems,
    maxItems: schema.maxItems,
    nullable: schema.nullable,
    'x-kubernetes-int-or-string': schema.x_kubernetes_int_or_string ?? false,
    'x-kubernetes-preserve-unknown-fields': schema.x_kubernetes_preserve_unknown_fields ?? false,
    'x-kubernetes-embedded-resource': schema.x_kubernetes_embedded_resource ?? false,
    'x-kubernetes-list-type': schema.x_kubernetes_list_type,
    'x-kubernetes-list-map-keys': schema.x_kubernetes_list_map_keys,
    'x-kubernetes-map-type': schema.x_kubernetes_map_type,
    'x-kubernetes-validations': schema.x_kubernetes_validations,
  };
}

/** Every field path of a schema, with its keywords as JSON. */
export function fieldPaths(
  schema: V1JSONSchemaProps,
  path = '',
  out = new Map<string, string>(),
): Map<string, string> {
  out.set(path || '(root)', JSON.stringify(keywordsOf(schema)));
  for (const [key, child] of Object.entries(schema.properties ?? {}))
    fieldPaths(child, `${path}.${key}`, out);
  const items: unknown = schema.items;
  if (items && typeof items === 'object') fieldPaths(items as V1JSONSchemaProps, `${path}[]`, out);
  const additional: unknown = schema.additionalProperties;
  if (additional && typeof additional === 'object')
    fieldPaths(additional as V1JSONSchemaProps, `${path}{}`, out);
  return out;
}

export function crdsIn(dir: string): Map<string, V1CustomResourceDefinition> {
  const crds = new Map<string, V1CustomResourceDefinition>();
  for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
    for (const doc of loadAllYaml(readFileSync(join(dir, file), 'utf8')) as V1CustomResourceDefinition[]) {
      if (doc?.kind === 'CustomResourceDefinition' && doc.metadata?.name) crds.set(doc.metadata.name, doc);
    }
  }
  return crds;
}

export interface Comparison {
  /** The report, one finding a line. */
  lines: string[];
  /** Fields, versions or CRDs upstream has and ARO lacks. */
  missing: number;
}

/** Upstream's actions.github.com scale-set CRDs against ARO's. */
export function compareCrds(
  upstream: Map<string, V1CustomResourceDefinition>,
  ours: Map<string, V1CustomResourceDefinition>,
): Comparison {
  const lines: string[] = [];
  let missing = 0;
  const same = (x: unknown, y: unknown): boolean => JSON.stringify(x) === JSON.stringify(y);
  for (const [name, theirs] of upstream) {
    if (!name.endsWith('.actions.github.com') || !/^(autoscaling|ephemeral)/.test(name)) continue;
    const mine = ours.get(name);
    if (!mine) {
      lines.push(`MISSING CRD ${name}`);
      missing++;
      continue;
    }
    for (const version of theirs.spec.versions) {
      const counterpart = mine.spec.versions.find((v) => v.name === version.name);
      if (!counterpart) {
        lines.push(`MISSING ${name} version ${version.name}`);
        missing++;
        continue;
      }
      const a = fieldPaths(version.schema?.openAPIV3Schema ?? {});
      const b = fieldPaths(counterpart.schema?.openAPIV3Schema ?? {});
      const lacking = [...a.keys()].filter((p) => !b.has(p));
      const extra = [...b.keys()].filter((p) => !a.has(p));
      const differing = [...a.keys()].filter((p) => b.has(p) && a.get(p) !== b.get(p));
      missing += lacking.length;
      lines.push(
        `${name} ${version.name}: upstream ${a.size} fields, ARO ${b.size}; ` +
          `missing ${lacking.length}, extra ${extra.length}, differing ${differing.length}`,
      );
      for (const p of lacking) lines.push(`  MISSING  ${p}`);
      for (const p of extra) lines.push(`  EXTRA    ${p}`);
      for (const p of differing) lines.push(`  DIFFERS  ${p}: upstream ${a.get(p)}, ARO ${b.get(p)}`);
      if (!same(version.subresources, counterpart.subresources)) lines.push('  DIFFERS  subresources');
      if (!same(version.additionalPrinterColumns, counterpart.additionalPrinterColumns))
        lines.push('  DIFFERS  printer columns');
    }
  }
  return { lines, missing };
}

function main(): number {
  const upstreamDir = process.argv[2];
  if (!upstreamDir) {
    process.stderr.write(
      'usage: npm run compare:crds -- <actions-runner-controller checkout>/config/crd/bases\n',
    );
    return 2;
  }
  const { lines, missing } = compareCrds(crdsIn(upstreamDir), crdsIn(join(__dirname, '..', 'crds')));
  for (const line of lines) process.stdout.write(`${line}\n`);
  return missing > 0 ? 1 : 0;
}

if (require.main === module) process.exitCode = main();
