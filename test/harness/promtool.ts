import { resolve } from 'node:path';
import { isExecutable, runBuildScript } from './build-script';

const BUILD_SCRIPT = resolve(__dirname, 'go', 'build-promtool.sh');

/**
 * promtool from PROMTOOL_BIN, else built once by test/harness/go/build-promtool.sh into the build cache
 * (minutes on two cores the first time, its progress on stderr; a finished build is reused at once).
 * `.ci/run` builds it as an install step, so a test seldom waits here.
 */
export async function findPromtool(): Promise<string> {
  const explicit = process.env.PROMTOOL_BIN;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`PROMTOOL_BIN=${explicit} is not an executable file`);
    return explicit;
  }
  const path = await runBuildScript(BUILD_SCRIPT);
  if (!isExecutable(path))
    throw new Error(`${BUILD_SCRIPT} did not print an executable promtool (got "${path}")`);
  return path;
}
