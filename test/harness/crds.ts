import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  loadAllYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { kubeRequest } from './rest';
import { waitFor } from './wait-for';

/** What a test needs to know about an installed CRD. */
export interface InstalledCrd {
  /** `<plural>.<group>` */
  name: string;
  group: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  servedVersions: string[];
  /** The file it was read from. */
  file: string;
}

function yamlFilesIn(path: string): string[] {
  if (!existsSync(path)) {
    return [];
  }
  if (!statSync(path).isDirectory()) {
    return [path];
  }
  return readdirSync(path)
    .filter((entry) => /\.(ya?ml|json)$/.test(entry))
    .sort()
    .map((entry) => join(path, entry));
}

/** Reads every CRD document from the given files and folders (multi-document YAML or JSON). */
export function readCrdFiles(
  paths: readonly string[],
): Array<{ crd: V1CustomResourceDefinition; file: string }> {
  const out: Array<{ crd: V1CustomResourceDefinition; file: string }> = [];
  for (const file of paths.flatMap(yamlFilesIn)) {
    let documents: unknown[];
    try {
      documents = loadAllYaml(readFileSync(file, 'utf8')) as unknown[];
    } catch (err) {
      throw new Error(`Cannot parse ${file}: ${(err as Error).message}`, { cause: err });
    }
    for (const doc of documents) {
      if (doc === null || doc === undefined) {
        continue; // an empty document, e.g. after a trailing `---`
      }
      const kind = (doc as { kind?: unknown }).kind;
      if (kind !== 'CustomResourceDefinition') {
        throw new Error(
          `${file} holds a ${String(kind)} document; only CustomResourceDefinitions belong in a CRD folder`,
        );
      }
      out.push({ crd: doc as V1CustomResourceDefinition, file });
    }
  }
  return out;
}

async function createOrReplace(
  api: ApiextensionsV1Api,
  crd: V1CustomResourceDefinition,
  file: string,
): Promise<void> {
  const name = crd.metadata?.name;
  if (!name) {
    throw new Error(`A CRD in ${file} has no metadata.name`);
  }
  try {
    await api.createCustomResourceDefinition({ body: crd });
    return;
  } catch (err) {
    if (!(err instanceof ApiException) || err.code !== 409) {
      throw new Error(`Creating CRD ${name} from ${file} failed: ${describeApiError(err)}`, { cause: err });
    }
  }
  // Already there (a reused control plane, or a second install): replace it, retrying on the conflict a
  // concurrent status update by the apiserver's CRD controllers can cause.
  await waitFor(
    async () => {
      const existing = await api.readCustomResourceDefinition({ name });
      const body = {
        ...crd,
        metadata: { ...crd.metadata, resourceVersion: existing.metadata?.resourceVersion },
      };
      try {
        await api.replaceCustomResourceDefinition({ name, body });
        return true;
      } catch (err) {
        if (err instanceof ApiException && err.code === 409) {
          return false;
        }
        throw new Error(`Replacing CRD ${name} from ${file} failed: ${describeApiError(err)}`, {
          cause: err,
        });
      }
    },
    { description: `CRD ${name} to be replaced without a conflict`, timeoutMs: 10_000 },
  );
}

function describeApiError(err: unknown): string {
  if (err instanceof ApiException) {
    const body = err.body as { message?: string } | string;
    return `HTTP ${err.code}: ${typeof body === 'string' ? body : (body?.message ?? JSON.stringify(body))}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * Creates or replaces every CRD found in `paths`, then waits until each is Established AND each served
 * version lists the resource in discovery: a CRD can be Established a moment before its group/version is
 * served, and a test that creates an object in that gap gets a 404.
 */
export async function installCrds(
  kc: KubeConfig,
  paths: readonly string[],
  options: { timeoutMs?: number } = {},
): Promise<InstalledCrd[]> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const found = readCrdFiles(paths);
  for (const { crd, file } of found) {
    await createOrReplace(api, crd, file);
  }
  const timeoutMs = options.timeoutMs ?? 30_000;
  // The CRDs settle independently; waiting for them side by side costs the slowest one, not the sum.
  return Promise.all(
    found.map(async ({ crd, file }): Promise<InstalledCrd> => {
      const name = crd.metadata?.name ?? '';
      await waitFor(
        async () => {
          const current = await api.readCustomResourceDefinition({ name });
          return current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        },
        { description: `CRD ${name} (${file}) to be Established`, timeoutMs },
      );
      const servedVersions = crd.spec.versions.filter((v) => v.served).map((v) => v.name);
      for (const version of servedVersions) {
        const path = `/apis/${crd.spec.group}/${version}`;
        await waitFor(
          async () => {
            const res = await kubeRequest(kc, { path });
            const resources = (res.body as { resources?: Array<{ name: string }> }).resources ?? [];
            return res.status === 200 && resources.some((r) => r.name === crd.spec.names.plural);
          },
          { description: `${crd.spec.names.plural} to be served in discovery at ${path}`, timeoutMs },
        );
      }
      return {
        name,
        group: crd.spec.group,
        kind: crd.spec.names.kind,
        plural: crd.spec.names.plural,
        namespaced: crd.spec.scope === 'Namespaced',
        servedVersions,
        file,
      };
    }),
  );
}
