import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The version of ARO, from the repository's package.json. It is found by walking up from this file
 * because the relative path differs between the sources (ts) and the build output (dist/...).
 */
function findVersion(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      try {
        const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
        if (pkg.name === 'aro' && pkg.version) return pkg.version;
      } catch {
        // An unreadable package.json on the way up is not ours; keep walking.
      }
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return 'unknown';
}

export const aroVersion: string = findVersion();

/**
 * GitHub asks API clients to name themselves; the Actions service logs the agent, so support can
 * tell ARO's requests apart from ARC's. `component` (e.g. `controller`, `listener`) says which part
 * of ARO is calling.
 */
export function userAgentFor(component?: string): string {
  const base = `ARO/${aroVersion} (actions-runner-operator; node ${process.version})`;
  return component ? `${base} ${component}` : base;
}
