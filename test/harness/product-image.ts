/*
 * What the product image may hold, judged on a list of its paths (no leading `/`): the paths its
 * Dockerfile adds over the base image. Shared by the test of the image buildah builds
 * (test/integration/image/product-image.test.ts) and the test of the Dockerfile's stages reproduced
 * without a container runtime (test/integration/charts/image.test.ts), which runs where buildah cannot.
 */

/** Files the product cannot run without: both apps, their entrypoints, the @aro packages, a dependency. */
export const PRODUCT_FILES: readonly string[] = [
  'app/dist/apps/controller/apps/controller/src/main.js',
  'app/dist/apps/listener/apps/listener/src/main.js',
  'usr/local/bin/aro-controller',
  'usr/local/bin/aro-listener',
  'app/package.json',
  ...['api', 'kube', 'actions', 'secrets', 'controllers', 'observability'].map(
    (lib) => `app/node_modules/@aro/${lib}/index.js`,
  ),
  'app/node_modules/@nestjs/core/package.json',
];

/** Where the product lives in the image. Anything the Dockerfile adds elsewhere is not the product. */
const PRODUCT_PLACES = [
  /^app$/,
  /^app\/package\.json$/,
  /^app\/dist(\/apps)?$/,
  /^app\/dist\/apps\/(controller|listener)(\/.*)?$/,
  /^app\/node_modules$/,
  // Production dependencies from the lockfile (npm ci --omit=dev) and the @aro packages; checked below.
  /^app\/node_modules\/.+$/,
  /^usr(\/local(\/bin(\/aro-(controller|listener))?)?)?$/,
];

/** Names that belong to development, as a whole word of any path segment (`defaults.js` is no `fault`). */
const DEVELOPMENT = [
  { what: 'the simulator', words: ['simulator'] },
  { what: 'the sandbox', words: ['sandbox'] },
  { what: 'a bench', words: ['bench', 'benches'] },
  { what: 'the chaos runner', words: ['chaos'] },
  { what: 'a fault switch', words: ['fault', 'faults'] },
  { what: 'a test or a test fixture', words: ['test', 'tests', 'testing', 'spec'] },
];

function words(path: string): Set<string> {
  return new Set(path.toLowerCase().split(/[/._-]+/));
}

/** Third-party packages are the lockfile's, not ours: their own folder names are theirs to choose. */
function ours(path: string): boolean {
  return !path.startsWith('app/node_modules/') || path.startsWith('app/node_modules/@aro/');
}

/** What in `paths` is development, by what it is; and what lies outside the product's places. */
export function productImageViolations(paths: Iterable<string>): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  const add = (what: string, path: string): void => void (found[what] ??= []).push(path);
  for (const path of paths) {
    if (!PRODUCT_PLACES.some((place) => place.test(path))) add('outside the product', path);
    if (!ours(path)) continue;
    const pathWords = words(path);
    for (const { what, words: marks } of DEVELOPMENT)
      if (marks.some((w) => pathWords.has(w))) add(what, path);
  }
  // A folder and everything in it are one finding: name the topmost paths only.
  for (const what of Object.keys(found)) {
    const all = found[what].sort();
    found[what] = all.filter((p) => !all.some((q) => p.startsWith(`${q}/`)));
  }
  return found;
}
