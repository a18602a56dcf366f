import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { isExecutable, runBuildScript } from './build-script';

/**
 * The conformance program (test/conformance, a Go module on upstream's github.com/actions/scaleset
 * client) is found or built like the control-plane binaries: `ARO_CONFORMANCE_BIN` wins, then the
 * build cache, else test/conformance/build.sh builds it (progress on stderr) into that cache.
 */

const PROGRAM_DIR = resolve(__dirname, '..', 'conformance');
const BUILD_SCRIPT = join(PROGRAM_DIR, 'build.sh');
const PROGRAM_NAME = 'aro-conformance';

/** The hash build.sh names its folder by: go.mod, go.sum, then the *.go files in byte order. */
function sourceHash(): string {
  const goFiles = readdirSync(PROGRAM_DIR)
    .filter((f) => f.endsWith('.go'))
    .sort();
  const hash = createHash('sha256');
  for (const file of ['go.mod', 'go.sum', ...goFiles]) hash.update(readFileSync(join(PROGRAM_DIR, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Where build.sh puts the program for the current sources, derived as build.sh derives it. */
export function conformanceProgramPath(): string {
  const cacheRoot =
    process.env.ARO_CONFORMANCE_CACHE ||
    join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'aro', 'conformance');
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  return join(cacheRoot, `${sourceHash()}-${process.platform}-${arch}`, PROGRAM_NAME);
}

async function build(log: (line: string) => void): Promise<string> {
  log(`building the conformance program with ${BUILD_SCRIPT} (first time only)`);
  const path = await runBuildScript(BUILD_SCRIPT);
  if (!isExecutable(path)) throw new Error(`${BUILD_SCRIPT} finished but printed no program (got "${path}")`);
  return path;
}

export async function findConformanceProgram(log: (line: string) => void): Promise<string> {
  const explicit = process.env.ARO_CONFORMANCE_BIN;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`ARO_CONFORMANCE_BIN=${explicit} is not an executable file`);
    return explicit;
  }
  const cached = conformanceProgramPath();
  if (isExecutable(cached)) return cached;
  return build(log);
}
