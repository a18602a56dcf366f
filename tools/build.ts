import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, nestApplications } from './nest-projects';

/*
 * `npm run build`: the product, that is each application nest-cli.json lists (the controller and the
 * listener; the development programs under apps/ run from source and are not listed), compiled by tsc
 * with its own tsconfig into dist/apps/<name>, then its `@aro/*` imports rewritten to relative paths by
 * tsc-alias (the compiled apps run without the path mapping). Stops at the first failure with tsc's own
 * output.
 */

function main(): void {
  rmSync(join(REPO_ROOT, 'dist'), { recursive: true, force: true });
  const bin = (tool: string) => join(REPO_ROOT, 'node_modules', '.bin', tool);
  for (const [name, app] of nestApplications()) {
    const tsconfig = app.compilerOptions.tsConfigPath;
    process.stderr.write(`build: ${name} (${tsconfig})\n`);
    execFileSync(bin('tsc'), ['-p', tsconfig], { cwd: REPO_ROOT, stdio: 'inherit' });
    execFileSync(bin('tsc-alias'), ['-p', tsconfig], { cwd: REPO_ROOT, stdio: 'inherit' });
  }
}

try {
  main();
} catch (err) {
  process.stderr.write(`build failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
