import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, sep } from 'node:path';
import { promisify } from 'node:util';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind, ListenerDefaults } from '@aro/api';
import { KubeClient, PodKind } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator } from '../../../apps/simulator/src';
import { readOrUndefined, testKubeConfig, waitFor } from '../../harness';
import { PRODUCT_FILES, productImageViolations } from '../../harness/product-image';
import { createScaleSet, startTestSimulator } from '../ephemeral-runner/fixture';
import { ContainerProcess, ensureImageAppsBuilt, startContainer } from './chart-process';
import { Manifest, REPO_ROOT, findManifest, helmBinary } from './helm-chart';
import { ReproducedImage, reproduceImage } from './image-build';
import { InstalledCharts, installCharts } from './install';

/*
 * The image as the Dockerfile builds it, without a container runtime: its stages reproduced into a
 * folder (image-build.ts, following the Dockerfile's own instructions: `npm ci --omit=dev` from the
 * lockfile with the pinned Node, the compiled dist/, image/bin/ in /usr/local/bin), and the chart's
 * controller container started from it. An extension module is put where the chart's extension
 * volume mounts it, by the chart's own init container command, and must act: its pod mutation seen on
 * a runner pod, its metric served on /metrics.
 *
 * The controller watches only this test's namespaces (`flags.watchSingleNamespace`), so it shares the
 * control plane of the other suites without touching their objects.
 */

jest.setTimeout(600_000);

const run = promisify(execFile);

const EXTENSION_PACKAGE = '@acme/aro-image-test-extension';
const EXTENSION_LABEL = 'example.com/extended-by';
const EXTENSION_METRIC = 'acme_image_test_extension_pods_mutated_total';

/**
 * What an extension author ships: plain CommonJS requiring the ARO runtime and its libraries by
 * package name (peer dependencies it does not bundle), so that its decorator and its injected
 * Registry are the app's own.
 */
const EXTENSION_SOURCE = `'use strict';
const { Inject, Injectable, Module } = require('@nestjs/common');
const { Counter, Registry } = require('prom-client');
const { RunnerExtension } = require('@aro/controllers');

class ImageTestExtension {
  constructor(registry) {
    this.name = 'image-test-extension';
    this.mutated = new Counter({
      name: '${EXTENSION_METRIC}',
      help: 'Runner pods this extension labelled.',
      registers: [registry],
    });
  }
  mutate(pod) {
    pod.metadata = pod.metadata || {};
    pod.metadata.labels = { ...pod.metadata.labels, '${EXTENSION_LABEL}': 'image-test-extension' };
    this.mutated.inc();
  }
}
Inject(Registry)(ImageTestExtension, undefined, 0);
Injectable()(ImageTestExtension);
RunnerExtension()(ImageTestExtension);

class ImageTestExtensionModule {}
Module({ providers: [ImageTestExtension] })(ImageTestExtensionModule);

module.exports = { ImageTestExtensionModule };
`;

describe('The image, reproduced from the Dockerfile', () => {
  let image: ReproducedImage;
  let sim: RunningSimulator;
  let kube: KubeClient;
  let installed: InstalledCharts | undefined;
  const processes: ContainerProcess[] = [];
  const folders: string[] = [];

  beforeAll(async () => {
    const log = (line: string): boolean => process.stderr.write(`[image] ${line}\n`);
    await helmBinary();
    await ensureImageAppsBuilt(log);
    image = await reproduceImage(log);
    sim = await startTestSimulator();
    kube = new KubeClient(testKubeConfig());
  }, 30 * 60_000);
  afterAll(async () => {
    for (const p of processes) await p.stop();
    await installed?.uninstall();
    kube?.close();
    await sim?.stop();
    image?.remove();
    for (const folder of folders) rmSync(folder, { recursive: true, force: true });
  });

  function executableOnPath(command: string): boolean {
    const path = image.hostPath(posix.join('/usr/local/bin', command));
    return existsSync(path) && (statSync(path).mode & 0o111) !== 0;
  }

  it('holds the pinned Node, the production dependencies only, both apps and their entrypoints, a non-root user', () => {
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    // The base image's Node is the one the tests run on.
    expect(image.nodeVersion).toBe(pkg.devDependencies.node);
    expect(process.versions.node).toBe(pkg.devDependencies.node);
    const modules = image.hostPath('/app/node_modules');
    for (const name of Object.keys(pkg.dependencies)) expect(existsSync(join(modules, name))).toBe(true);
    for (const name of ['typescript', 'jest', '@swc/core', 'tsc-alias'])
      expect(existsSync(join(modules, name))).toBe(false);

    expect(image.env.ARO_HOME).toBe('/app');
    for (const app of ['controller', 'listener']) {
      const main = posix.join(image.env.ARO_HOME, 'dist/apps', app, 'apps', app, 'src/main.js');
      expect(existsSync(image.hostPath(main))).toBe(true);
    }
    expect(executableOnPath('aro-controller')).toBe(true);
    // The command the controller gives listener pods is in the image too.
    expect(executableOnPath(ListenerDefaults.command[0])).toBe(true);
    expect(image.user).toBe('1000:1000');
  });

  it('holds the product only: nothing of development (simulator, sandbox, benches, chaos, fault switches, tests)', () => {
    // The stand-in's root holds exactly what the final stage adds over its base (the build stage is the
    // checkout, whose dist/ may hold more): the same judgement as the buildah-built image's.
    const paths = readdirSync(image.root, { recursive: true, encoding: 'utf8' }).map((p) =>
      p.split(sep).join('/'),
    );
    expect(PRODUCT_FILES.filter((path) => !paths.includes(path))).toEqual([]);
    expect(productImageViolations(paths)).toEqual({});
  });

  it("loads an extension from the chart's extension volume: its pod mutation and its metric", async () => {
    installed = await installCharts({
      configUrl: sim.configUrl({ org: 'octo' }),
      githubToken: DEFAULT_PAT,
      controllerValues: ({ runnerNamespace }) => ({
        replicaCount: 1,
        'flags.watchSingleNamespace': runnerNamespace,
        extensions: {
          modules: [EXTENSION_PACKAGE],
          image: { repository: 'registry.example.com/acme/aro-image-test-extension', tag: '1.0.0' },
        },
      }),
    });
    const charts = installed;
    const podSpec = charts.deployment.spec?.template.spec;
    const manager = podSpec?.containers.find((c) => c.name === 'manager') as V1Container;
    // The chart's command is one of the image's entrypoints, its user the image's.
    expect(executableOnPath(manager.command?.[0] ?? '')).toBe(true);
    const [uid, gid] = image.user.split(':').map(Number);
    expect(podSpec?.securityContext).toMatchObject({ runAsUser: uid, runAsGroup: gid, runAsNonRoot: true });

    // The extension image, and its init container copying it into the volume, as the kubelet would
    // run it: each absolute path in its command is in the extension image, or in a volume it mounts.
    const init = podSpec?.initContainers?.find((c) => c.name === 'extensions') as V1Container;
    const extensionImage = mkdtempSync(join(tmpdir(), 'aro-extension-image-'));
    folders.push(extensionImage);
    const packageDir = join(extensionImage, 'extensions', 'node_modules', ...EXTENSION_PACKAGE.split('/'));
    mkdirSync(packageDir, { recursive: true });
    writeFileSync(
      join(packageDir, 'package.json'),
      JSON.stringify({ name: EXTENSION_PACKAGE, main: 'index.js' }),
    );
    writeFileSync(join(packageDir, 'index.js'), EXTENSION_SOURCE);
    const volumes: Record<string, string> = {};
    for (const mount of init.volumeMounts ?? []) {
      const volume = podSpec?.volumes?.find((v) => v.name === mount.name);
      expect(volume?.emptyDir).toBeDefined();
      volumes[mount.mountPath] = join(
        extensionImage,
        '..',
        `${posix.basename(extensionImage)}-${mount.name}`,
      );
      mkdirSync(volumes[mount.mountPath]);
      folders.push(volumes[mount.mountPath]);
    }
    const inContainer = (arg: string): string => {
      if (!arg.startsWith('/')) return arg;
      const mount = Object.keys(volumes).find((m) => arg === m || arg.startsWith(`${m}/`));
      // Concatenated, not joined: `cp -R <dir>/. <dest>` means the folder's contents.
      return mount ? volumes[mount] + arg.slice(mount.length) : extensionImage + arg;
    };
    const [initCommand, ...initArgs] = [...(init.command ?? []), ...(init.args ?? [])];
    await run(initCommand, initArgs.map(inContainer));

    // The manager gets the same volume at its own mount path.
    const extensionVolume = init.volumeMounts?.[0]?.name;
    const managerMount = manager.volumeMounts?.find((m) => m.name === extensionVolume);
    const initMount = init.volumeMounts?.[0]?.mountPath ?? '';
    expect(managerMount).toBeDefined();
    const replica = await startContainer(
      charts.deployment,
      'manager',
      {
        name: `${charts.release}-0`,
        namespace: charts.controllerNamespace,
        serviceAccountName: charts.serviceAccountName,
      },
      charts.kubeconfigPath,
      { image, mounts: { [managerMount?.mountPath ?? '']: volumes[initMount] } },
    );
    processes.push(replica);
    const explain = (err: unknown): never => {
      throw new Error(
        `${err instanceof Error ? err.message : String(err)}\n--- controller (last lines) ---\n` +
          replica.output().split('\n').slice(-25).join('\n'),
        { cause: err },
      );
    };
    const exited = replica.exited.then((code) => {
      throw new Error(`the controller from the image exited with ${code}`);
    });
    exited.catch(() => undefined);
    await Promise.race([
      waitFor(async () => (await replica.probe('readinessProbe')).status === 200, {
        description: 'the controller from the image ready',
        timeoutMs: 120_000,
      }),
      exited,
    ]).catch(explain);

    const ars = findManifest(charts.scaleSet, 'AutoscalingRunnerSet') as Manifest & {
      spec: { githubConfigUrl: string; githubConfigSecret: string; template: { spec: object } };
    };
    const ns = charts.runnerNamespace;
    await kube.create<EphemeralRunner>(EphemeralRunnerKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunner',
      metadata: { name: 'extended', namespace: ns },
      spec: {
        githubConfigUrl: ars.spec.githubConfigUrl,
        githubConfigSecret: ars.spec.githubConfigSecret,
        runnerScaleSetId: await createScaleSet(sim, `${charts.release}-extended`),
        spec: ars.spec.template.spec,
      } as EphemeralRunner['spec'],
    });
    const pod = await waitFor(() => readOrUndefined(() => kube.get<V1Pod>(PodKind, ns, 'extended')), {
      description: 'the runner pod created by the controller from the image',
      timeoutMs: 60_000,
    }).catch(explain);
    expect(pod.metadata?.labels?.[EXTENSION_LABEL]).toBe('image-test-extension');
    const metrics = await replica.get('/metrics');
    expect(metrics.body).toMatch(new RegExp(`^${EXTENSION_METRIC} [1-9]`, 'm'));
  });
});
