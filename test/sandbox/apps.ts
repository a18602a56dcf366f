import { join } from 'node:path';

/** The repository's root: test/sandbox/../.. */
const REPO_ROOT = join(__dirname, '..', '..');

/** The controller app, run from source (`node -r @swc-node/register`), as each replica's process. */
export const CONTROLLER_MAIN = join(REPO_ROOT, 'apps', 'controller', 'src', 'main.ts');
/** The listener app, run from source by the listener-pod player for each listener pod. */
export const LISTENER_MAIN = join(REPO_ROOT, 'apps', 'listener', 'src', 'main.ts');
