import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { isExecutable, runBuildScript } from './build-script';

/** The binaries a control plane is made of, with envtest's names. */
export type BinaryName = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

export interface FoundBinary {
  path: string;
  /** Where it was found, for the start-up log: `TEST_ASSET_ETCD`, `KUBEBUILDER_ASSETS`, ... */
  source: string;
}

export interface ControlPlaneBinaries {
  etcd: FoundBinary;
  kubeApiserver: FoundBinary;
  /** Absent only when it could be neither found nor built; the control plane then runs without GC. */
  kubeControllerManager: FoundBinary | undefined;
}

const BUILD_SCRIPT = resolve(__dirname, 'go', 'build.sh');
const VERSIONS_FILE = resolve(__dirname, 'go', 'versions.env');

const TEST_ASSET_VARIABLE: Record<BinaryName, string> = {
  etcd: 'TEST_ASSET_ETCD',
  'kube-apiserver': 'TEST_ASSET_KUBE_APISERVER',
  'kube-controller-manager': 'TEST_ASSET_KUBE_CONTROLLER_MANAGER',
};

function goArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch;
}

/**
 * setup-envtest's store, newest 1.3x first: `<data home>/kubebuilder-envtest/k8s/<version>-<os>-<arch>/`.
 * Reusing it lets a Go developer's existing download serve here too.
 */
function setupEnvtestStoreDirs(): string[] {
  const dataHome = process.env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  const store = join(dataHome, 'kubebuilder-envtest', 'k8s');
  if (!existsSync(store)) {
    return [];
  }
  const suffix = `-${process.platform}-${goArch()}`;
  const versioned = readdirSync(store)
    .filter((entry) => entry.endsWith(suffix))
    .map((entry) => ({ entry, version: entry.slice(0, -suffix.length).split('.').map(Number) }))
    .filter(
      ({ version }) =>
        version.length === 3 &&
        version.every(Number.isInteger) &&
        version[0] === 1 &&
        version[1] >= 30 &&
        version[1] < 40,
    );
  versioned.sort((a, b) => b.version[1] - a.version[1] || b.version[2] - a.version[2]);
  return versioned.map(({ entry }) => join(store, entry));
}

/** The folder build.sh fills, derived the same way build.sh derives it, so a finished build needs no `go`. */
export function buildCacheDir(): string {
  const versions = Object.fromEntries(
    readFileSync(VERSIONS_FILE, 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split('=', 2) as [string, string]),
  );
  const cacheRoot =
    process.env.ARO_ENVTEST_CACHE ||
    join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'aro', 'envtest');
  const kube = String(versions.KUBE_VERSION).replace(/^v/, '');
  const etcd = String(versions.ETCD_VERSION).replace(/^v/, '');
  return join(cacheRoot, `${kube}-etcd-${etcd}-${process.platform}-${goArch()}`);
}

/** Looks a binary up in envtest's order, without building anything. */
export function lookUpBinary(name: BinaryName): FoundBinary | undefined {
  const variable = TEST_ASSET_VARIABLE[name];
  const explicit = process.env[variable];
  if (explicit) {
    if (!isExecutable(explicit)) {
      throw new Error(`${variable}=${explicit} is not an executable file`);
    }
    return { path: explicit, source: variable };
  }
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets && isExecutable(join(assets, name))) {
    return { path: join(assets, name), source: 'KUBEBUILDER_ASSETS' };
  }
  for (const dir of setupEnvtestStoreDirs()) {
    if (isExecutable(join(dir, name))) {
      return { path: join(dir, name), source: `setup-envtest store (${dir})` };
    }
  }
  const built = buildCacheDir();
  if (existsSync(join(built, '.complete')) && isExecutable(join(built, name))) {
    return { path: join(built, name), source: `build cache (${built})` };
  }
  return undefined;
}

/**
 * Runs test/harness/go/build.sh, streaming its progress (stderr) to ours, and returns the folder it prints
 * on its last stdout line. The first build takes minutes; the script reuses a finished build at once.
 */
export async function buildControlPlane(log: (line: string) => void): Promise<string> {
  log(`building the control plane from source with ${BUILD_SCRIPT} (first time only; minutes on 2 cores)`);
  const dir = await runBuildScript(BUILD_SCRIPT);
  if (!dir || !existsSync(join(dir, '.complete'))) {
    throw new Error(`${BUILD_SCRIPT} finished but did not print a completed folder (got "${dir}")`);
  }
  return dir;
}

/**
 * Finds every control-plane binary (TEST_ASSET_* > KUBEBUILDER_ASSETS > setup-envtest store > our build
 * cache) and builds what is missing. kube-controller-manager is not in envtest tarballs, so it is often the
 * one missing; if it cannot be built the control plane runs without it, and says so loudly.
 */
export async function findControlPlaneBinaries(log: (line: string) => void): Promise<ControlPlaneBinaries> {
  let etcd = lookUpBinary('etcd');
  let kubeApiserver = lookUpBinary('kube-apiserver');
  let kubeControllerManager = lookUpBinary('kube-controller-manager');
  if (!etcd || !kubeApiserver || !kubeControllerManager) {
    const missing = [
      !etcd && 'etcd',
      !kubeApiserver && 'kube-apiserver',
      !kubeControllerManager && 'kube-controller-manager',
    ].filter(Boolean);
    log(
      `not found in TEST_ASSET_*, KUBEBUILDER_ASSETS, the setup-envtest store or the build cache: ${missing.join(', ')}`,
    );
    let built: string | undefined;
    try {
      built = await buildControlPlane(log);
    } catch (err) {
      if (!etcd || !kubeApiserver) {
        throw new Error(
          `No ${missing.join('/')} binary: set KUBEBUILDER_ASSETS or TEST_ASSET_* (see docs/testing.md), or fix the build: ${(err as Error).message}`,
          { cause: err },
        );
      }
      log(`!!! ${(err as Error).message}`);
    }
    const fromBuild = (name: BinaryName): FoundBinary | undefined =>
      built && isExecutable(join(built, name))
        ? { path: join(built, name), source: `build (${built})` }
        : undefined;
    etcd ??= fromBuild('etcd');
    kubeApiserver ??= fromBuild('kube-apiserver');
    kubeControllerManager ??= fromBuild('kube-controller-manager');
  }
  if (!etcd || !kubeApiserver) {
    throw new Error('etcd or kube-apiserver is still missing after the build; see the messages above');
  }
  if (!kubeControllerManager) {
    log(
      '!!! NO kube-controller-manager: the control plane runs WITHOUT garbage collection and namespace deletion. ' +
        'Tests that need them are skipped. Set TEST_ASSET_KUBE_CONTROLLER_MANAGER or let test/harness/go/build.sh build it.',
    );
  }
  return { etcd, kubeApiserver, kubeControllerManager };
}
