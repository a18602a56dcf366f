import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { homedir } from 'node:os';
import { isExecutable, runBuildScript } from './build-script';

const run = promisify(execFile);

const BUILD_SCRIPT = resolve(__dirname, 'go', 'build-helm.sh');
const HELM_MODULE = resolve(__dirname, 'go', 'helm', 'go.mod');

export interface FoundHelm {
  path: string;
  /** `HELM_BIN`, `PATH` or the build cache, for the log. */
  source: string;
  version: string;
}

/** The helm version the wrapper module pins (test/harness/go/helm/go.mod). */
export function pinnedHelmVersion(): string {
  const match = /^require helm\.sh\/helm\/v4 (v\S+)$/m.exec(readFileSync(HELM_MODULE, 'utf8'));
  if (!match) throw new Error(`no helm.sh/helm/v4 requirement in ${HELM_MODULE}`);
  return match[1];
}

/** The cache the control-plane binaries are built into (binaries.ts); build-helm.sh uses it too. */
function buildCacheRoot(): string {
  return (
    process.env.ARO_ENVTEST_CACHE ||
    join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'aro', 'envtest')
  );
}

/** Where build-helm.sh puts helm, derived as the script derives it, so a finished build needs no `go`. */
export function helmCachePath(): string {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return join(
    buildCacheRoot(),
    `helm-${pinnedHelmVersion().replace(/^v/, '')}-${process.platform}-${arch}`,
    'helm',
  );
}

async function versionOf(path: string): Promise<string> {
  const { stdout } = await run(path, ['version', '--template', '{{.Version}}'], { timeout: 30_000 });
  return stdout.trim();
}

/** helm from HELM_BIN, then PATH, then the build cache; undefined when none is there. Builds nothing. */
export async function lookUpHelm(): Promise<FoundHelm | undefined> {
  const explicit = process.env.HELM_BIN;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`HELM_BIN=${explicit} is not an executable file`);
    return { path: explicit, source: 'HELM_BIN', version: await versionOf(explicit) };
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, 'helm');
    if (isExecutable(candidate)) {
      return { path: candidate, source: 'PATH', version: await versionOf(candidate) };
    }
  }
  const cached = helmCachePath();
  if (existsSync(join(cached, '..', '.complete')) && isExecutable(cached)) {
    return { path: cached, source: 'build cache', version: await versionOf(cached) };
  }
  return undefined;
}

/**
 * helm, building it with test/harness/go/build-helm.sh when it is nowhere (minutes on two cores, once;
 * its progress goes to stderr). `.ci/run` builds it as an install step, so a test seldom waits here.
 */
export async function findHelm(
  log: (line: string) => void = (line) => console.log(line),
): Promise<FoundHelm> {
  const found = await lookUpHelm();
  if (found) return found;
  log(`helm is not in HELM_BIN, PATH or the build cache; building it with ${BUILD_SCRIPT} (first time only)`);
  const path = await runBuildScript(BUILD_SCRIPT);
  if (!isExecutable(path))
    throw new Error(`${BUILD_SCRIPT} did not print an executable helm (got "${path}")`);
  return { path, source: 'build', version: await versionOf(path) };
}
