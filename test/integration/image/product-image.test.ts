import { pathsAddedOver } from '../../harness/node/image-files';
import { PRODUCT_FILES, productImageViolations } from '../../harness/product-image';
import { buildNodeImages } from '../../harness/node/prepare';
import { scaled } from '../../harness/time-scale';
import { describeOnRealNode } from '../real-node/availability';

/*
 * The product image holds the product: the controller and the listener, the production dependencies,
 * the @aro packages and the two entrypoints, and nothing of development (the simulator, the sandbox, the
 * benches, the chaos runner, the test fault switches, the test fixtures beside the sources).
 *
 * It reads the very image the real node runs, built from the Dockerfile by buildah (build-images.sh,
 * cached by content, so seconds once built), as the docker-archive containerd imports; only the files
 * the Dockerfile's stages add over the base image are judged. Building needs root and buildah, so the
 * test follows the real-node suite's rules: skipped loudly, with the reason, where the node cannot run.
 */

/** Minutes when the image must be built (npm ci and the build in buildah); seconds once cached. */
jest.setTimeout(scaled(1_800_000));

describeOnRealNode('The product image (the Dockerfile, built by buildah)', () => {
  let added: Set<string>;
  const log = (line: string): void => void process.stderr.write(`[product image] ${line}\n`);

  beforeAll(async () => {
    const images = await buildNodeImages(log);
    added = pathsAddedOver(images.aro.archive, images.base.archive);
    log(`${images.aro.ref}: ${added.size} paths over ${images.base.ref}`);
  }, scaled(1_800_000));

  it('holds the controller, the listener, their packages and their entrypoints', () => {
    expect(PRODUCT_FILES.filter((path) => !added.has(path))).toEqual([]);
  });

  it('holds nothing of development: no simulator, sandbox, bench, chaos runner, fault switch or test', () => {
    expect(productImageViolations(added)).toEqual({});
  });
});

describe('productImageViolations', () => {
  it('names development by word and anything outside the product, once per folder', () => {
    expect(
      productImageViolations([
        'app/dist/apps/controller/apps/controller/src/main.js',
        'app/dist/apps/controller/libs/api/src/defaults.js',
        'app/dist/apps/controller/apps/controller/src/test-faults.js',
        'app/dist/apps/controller/apps/controller/src/testing',
        'app/dist/apps/controller/apps/controller/src/testing/provider-throws.module.js',
        'app/dist/apps/simulator',
        'app/dist/apps/simulator/apps/simulator/src/main.js',
        'app/node_modules/some-package/test/fixture.js',
        'app/node_modules/@aro/bench/index.js',
        'app/test',
        'app/test/sandbox',
        'app/test/sandbox/main.ts',
      ]),
    ).toEqual({
      'outside the product': ['app/dist/apps/simulator', 'app/test'],
      'the simulator': ['app/dist/apps/simulator'],
      'the sandbox': ['app/test/sandbox'],
      'a bench': ['app/node_modules/@aro/bench/index.js'],
      'a fault switch': ['app/dist/apps/controller/apps/controller/src/test-faults.js'],
      'a test or a test fixture': [
        'app/dist/apps/controller/apps/controller/src/test-faults.js',
        'app/dist/apps/controller/apps/controller/src/testing',
        'app/test',
      ],
    });
  });
});
