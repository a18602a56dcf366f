import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { FoundHelm, findHelm } from '../../harness/helm';

export const REPO_ROOT = resolve(__dirname, '..', '..', '..');
export const CHARTS = {
  controller: resolve(REPO_ROOT, 'charts', 'aro-controller'),
  scaleSet: resolve(REPO_ROOT, 'charts', 'aro-scale-set'),
} as const;

/** A rendered Kubernetes object, as `helm template` prints it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  [field: string]: unknown;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

let helmPromise: Promise<FoundHelm> | undefined;

/** helm, found or built once per test file (see test/harness/helm.ts). */
export function helmBinary(): Promise<FoundHelm> {
  helmPromise ??= findHelm((line) => process.stderr.write(`[helm] ${line}\n`));
  return helmPromise;
}

/** Runs helm; never throws on a non-zero exit, so tests can look at refusals. */
export async function helm(args: string[]): Promise<HelmResult> {
  const { path } = await helmBinary();
  return new Promise((resolvePromise, reject) => {
    execFile(
      path,
      args,
      {
        timeout: 120_000,
        maxBuffer: 64 * 1024 * 1024,
        // No user config, cache or repositories leak into a render.
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '/tmp',
          HELM_CACHE_HOME: '/nonexistent/helm-cache',
          HELM_CONFIG_HOME: '/nonexistent/helm-config',
          HELM_DATA_HOME: '/nonexistent/helm-data',
        },
      },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          reject(err);
          return;
        }
        resolvePromise({ code: err ? Number(err.code) : 0, stdout, stderr });
      },
    );
  });
}

export interface RenderOptions {
  release: string;
  namespace: string;
  valuesFiles?: string[];
  /** `--set-json key=value` pairs, for values only known at test time (URLs, names). */
  setJson?: Record<string, unknown>;
  /** `--set key=value` pairs, typed by Helm as a user's command line is (`1` is an int64, not a float64). */
  set?: Record<string, string>;
}

export function templateArgs(chart: string, opts: RenderOptions): string[] {
  const args = ['template', opts.release, chart, '--namespace', opts.namespace, '--kube-version', '1.36.3'];
  for (const file of opts.valuesFiles ?? []) args.push('--values', file);
  for (const [key, value] of Object.entries(opts.setJson ?? {}))
    args.push('--set-json', `${key}=${JSON.stringify(value)}`);
  for (const [key, value] of Object.entries(opts.set ?? {})) args.push('--set', `${key}=${value}`);
  return args;
}

/** `helm template`'s output as text; throws with helm's message when it refuses. */
export async function renderText(chart: string, opts: RenderOptions): Promise<string> {
  const result = await helm(templateArgs(chart, opts));
  if (result.code !== 0) throw new Error(`helm template ${chart} failed (${result.code}):\n${result.stderr}`);
  return result.stdout;
}

/** `helm template`'s objects. */
export async function render(chart: string, opts: RenderOptions): Promise<Manifest[]> {
  return (loadAllYaml(await renderText(chart, opts)) as Array<Manifest | null>).filter(
    (doc): doc is Manifest => doc !== null && typeof doc === 'object',
  );
}

export function findManifest(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (!found) {
    const have = manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ');
    throw new Error(`no ${kind}${name ? `/${name}` : ''} in the render; it has ${have}`);
  }
  return found;
}

/**
 * Runs the harness's helm as a person runs it against a cluster: from the repository root, with
 * `KUBECONFIG` the cluster's and helm's own folders under `work` (so no run reads or writes the
 * machine's). Returns stdout; a failure names the command and carries stderr.
 */
export async function helmAt(
  kubeconfigPath: string,
  work: string,
  args: string[],
  timeoutMs: number,
): Promise<string> {
  const { path } = await helmBinary();
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: work,
    KUBECONFIG: kubeconfigPath,
    HELM_CACHE_HOME: join(work, 'helm-cache'),
    HELM_CONFIG_HOME: join(work, 'helm-config'),
    HELM_DATA_HOME: join(work, 'helm-data'),
  };
  return new Promise((resolve, reject) => {
    execFile(
      path,
      args,
      { cwd: REPO_ROOT, env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`helm ${args.join(' ')} failed: ${err.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}
