import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { OpenApiDocument } from './core-schemas';

/** The Kubernetes release whose core schemas the CRDs inline (the same one the test control plane runs). */
export const KUBERNETES_MODULE = 'k8s.io/kubernetes@v1.36.3';
const DOCUMENT_PATH = ['api', 'openapi-spec', 'v3', 'api__v1_openapi.json'];
const GO_TIMEOUT_MS = 120_000;

function goOutput(args: string[]): string {
  return execFileSync('go', args, {
    encoding: 'utf8',
    timeout: GO_TIMEOUT_MS,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * Path of Kubernetes' own OpenAPI v3 document for the core group. `ARO_K8S_OPENAPI` wins; otherwise the Go
 * module cache, downloading the module once if it is not there yet.
 */
export function locateKubernetesOpenApi(): string {
  const fromEnv = process.env.ARO_K8S_OPENAPI;
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`ARO_K8S_OPENAPI=${fromEnv} does not exist`);
    return fromEnv;
  }
  let moduleDir: string;
  try {
    moduleDir = join(goOutput(['env', 'GOMODCACHE']).trim(), KUBERNETES_MODULE);
    if (!existsSync(join(moduleDir, ...DOCUMENT_PATH))) {
      const downloaded = JSON.parse(goOutput(['mod', 'download', '-json', KUBERNETES_MODULE])) as {
        Dir?: string;
      };
      if (!downloaded.Dir) throw new Error(`go mod download ${KUBERNETES_MODULE} reported no directory`);
      moduleDir = downloaded.Dir;
    }
  } catch (err) {
    throw new Error(
      `cannot find Kubernetes' OpenAPI document: set ARO_K8S_OPENAPI to api__v1_openapi.json of ` +
        `${KUBERNETES_MODULE}, or install Go so the module cache can provide it (${(err as Error).message})`,
      { cause: err },
    );
  }
  const path = join(moduleDir, ...DOCUMENT_PATH);
  if (!existsSync(path))
    throw new Error(`${KUBERNETES_MODULE} has no ${DOCUMENT_PATH.join('/')} at ${moduleDir}`);
  return path;
}

export function loadKubernetesOpenApi(path = locateKubernetesOpenApi()): OpenApiDocument {
  const document = JSON.parse(readFileSync(path, 'utf8')) as Partial<OpenApiDocument>;
  if (!document.components?.schemas)
    throw new Error(`${path} is not an OpenAPI v3 document with components.schemas`);
  return document as OpenApiDocument;
}
