import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the real node needs before it can start, made once and cached: the Debian packages
 * (install-packages.sh), the kubelet and kube-scheduler (build-node-binaries.sh) and the images
 * (build-images.sh). Each step is a script that `.ci/run` calls too, so a CI run pays for them outside
 * any test timeout; here they run again and find everything done (seconds).
 */

const HERE = __dirname;

export interface NodeImages {
  pause: NodeImage;
  base: NodeImage;
  aro: NodeImage;
  runner: NodeImage;
}

export interface NodeImage {
  /** The reference pods name (`image:`), e.g. `localhost/aro:<content key>`. */
  ref: string;
  /** The docker-archive that is imported into the node's containerd. */
  archive: string;
  /** How long its build took when it was built (0 for none measured). */
  buildSeconds: number;
}

export interface NodeArtifacts {
  /** The build cache all of it lives in (~/.cache/aro/envtest). */
  cacheRoot: string;
  kubelet: string;
  kubeScheduler: string;
  images: NodeImages;
  /** Wall time of this preparation (near 0 when everything was cached). */
  seconds: number;
}

/** The real node cannot run here; `reason` says what is missing, for a loud skip. */
export class NodeUnavailable extends Error {}

/** Runs one preparation script: its progress lines go to `log`; resolves with its stdout lines. */
function runScript(script: string, log: (line: string) => void): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [join(HERE, script)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderrTail = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderrTail = (stderrTail + text).slice(-4000);
      for (const line of text.split('\n')) {
        // Only the scripts' own progress lines; compiler and package-manager chatter stays in the tail.
        if (/^\[(node|node build|node images|node packages)\]/.test(line)) log(line);
      }
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) {
        resolve(stdout.trim().split('\n'));
      } else {
        reject(
          new NodeUnavailable(
            `${script} exited ${code}: ${stderrTail.trim().split('\n').slice(-8).join(' | ')}`,
          ),
        );
      }
    });
  });
}

/** The `<name>_ref=...` lines build-images.sh prints. */
function readImages(lines: readonly string[]): NodeImages {
  const env = Object.fromEntries(
    lines
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  const image = (name: string): NodeImage => ({
    ref: env[`${name}_ref`],
    archive: env[`${name}_archive`],
    buildSeconds: Number(env[`${name}_build_seconds`] ?? 0),
  });
  return { pause: image('pause'), base: image('base'), aro: image('aro'), runner: image('runner') };
}

/**
 * Why the real node cannot run on this machine at all (not root, no namespaces, no cgroups), before
 * anything is installed or built; undefined when it can be tried.
 */
export function nodeUnsupportedReason(): string | undefined {
  if (process.platform !== 'linux') return `the real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'the real node needs root (containerd, mounts, namespaces)';
  if (!existsSync('/sys/fs/cgroup/memory') && !existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    return 'no cgroup filesystem at /sys/fs/cgroup';
  }
  if (process.env.ARO_REAL_NODE === 'off') return 'ARO_REAL_NODE=off';
  return undefined;
}

/**
 * Only the images (build-images.sh, cached by content): for a test that reads an image's files without a
 * node. Needs what the build needs (root, buildah, mmdebstrap); the caller skips by the real node's rules.
 */
export async function buildNodeImages(log: (line: string) => void): Promise<NodeImages> {
  const unsupported = nodeUnsupportedReason();
  if (unsupported) throw new NodeUnavailable(unsupported);
  return readImages(await runScript('build-images.sh', log));
}

export async function prepareNode(log: (line: string) => void): Promise<NodeArtifacts> {
  const began = Date.now();
  const unsupported = nodeUnsupportedReason();
  if (unsupported) throw new NodeUnavailable(unsupported);
  await runScript('install-packages.sh', log);
  const binDir = (await runScript('build-node-binaries.sh', log)).pop() ?? '';
  const imageLines = await runScript('build-images.sh', log);
  return {
    cacheRoot: join(binDir, '..'),
    kubelet: join(binDir, 'kubelet'),
    kubeScheduler: join(binDir, 'kube-scheduler'),
    images: readImages(imageLines),
    seconds: (Date.now() - began) / 1000,
  };
}
