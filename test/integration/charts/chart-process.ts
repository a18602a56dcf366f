import { ChildProcess, execFile, spawn } from 'node:child_process';
import {
  createWriteStream,
  existsSync,
  mkdirSync,
  rmSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Container, V1Deployment, V1EnvVar, V1Volume } from '@kubernetes/client-node';
import { freePort, processExists } from '../../harness';
import { keyValues, readDockerfile } from './dockerfile';
import { REPO_ROOT } from './helm-chart';
import type { ReproducedImage } from './image-build';

/*
 * Runs a container of a rendered Deployment as a local process, the way the ARO image would run it.
 *
 * The one translation from image to checkout, in one place: the image puts image/bin/ on PATH and sets
 * ARO_HOME=/app, where `npm run build` left dist/; here image/bin/ goes first on PATH with the pinned
 * Node beside it, and ARO_HOME is this checkout after the same build. The wrapper scripts are the
 * Dockerfile's own files, so a command the chart names but the image lacks, or a dist path that moved,
 * fails here. Everything else comes from the Deployment as rendered: command, args, env (the downward
 * API answered as the kubelet would), and each mount, which must be one the test can stand in for.
 * The pod network is the other stand-in: each replica's container port is served on a free loopback
 * port, as each pod would have an IP of its own.
 */

const run = promisify(execFile);

/** The Nest projects the chart's image runs, as `npm run build` builds them. */
function imageProjects(): string[] {
  return ['controller', 'listener'].filter((p) => existsSync(join(REPO_ROOT, 'apps', p, 'src', 'main.ts')));
}

function newestSourceMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') newest = Math.max(newest, newestSourceMtime(path));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
      newest = Math.max(newest, statSync(path).mtimeMs);
    }
  }
  return newest;
}

/**
 * Builds the apps the image holds unless dist/ is newer than every source they compile from. Each
 * build takes a minute or two on this machine; a rerun with nothing changed takes none.
 */
export async function ensureImageAppsBuilt(log: (line: string) => void): Promise<void> {
  const sources = Math.max(
    newestSourceMtime(join(REPO_ROOT, 'libs')),
    newestSourceMtime(join(REPO_ROOT, 'apps')),
  );
  const stale = imageProjects().some((project) => {
    const main = join(REPO_ROOT, 'dist', 'apps', project, 'apps', project, 'src', 'main.js');
    return !existsSync(main) || statSync(main).mtimeMs <= sources;
  });
  if (!stale) return;
  log('building the apps (npm run build) for the image stand-in');
  await run('npm', ['run', 'build'], {
    cwd: REPO_ROOT,
    timeout: 15 * 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
}

/**
 * The environment the image gives every process, translated to this checkout: the final stage's ENV
 * as the Dockerfile says (NODE_ENV, ARO_HOME, ...), with ARO_HOME the checkout where `npm run build`
 * left dist/, and image/bin/ first on PATH with the pinned Node beside it.
 */
export function imageEnvironment(): Record<string, string> {
  const stages = readDockerfile().stages;
  const env: Record<string, string> = {};
  for (const i of stages[stages.length - 1].instructions) {
    if (i.keyword === 'ENV') Object.assign(env, keyValues(i.args));
  }
  if (env.ARO_HOME === undefined) throw new Error('the Dockerfile no longer sets ARO_HOME in the image');
  return {
    ...env,
    ARO_HOME: REPO_ROOT,
    PATH: [join(REPO_ROOT, 'image', 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(delimiter),
  };
}

/**
 * The environment of a reproduced image: its ENV with each absolute path moved under its root, and
 * PATH as the node base image has it (/usr/local/bin first, where the Dockerfile puts the entrypoints;
 * the pinned Node stands in for the base image's own).
 */
export function reproducedImageEnvironment(image: ReproducedImage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(image.env)) {
    env[key] = value.startsWith('/') ? image.hostPath(value) : value;
  }
  env.PATH = [image.hostPath('/usr/local/bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(
    delimiter,
  );
  return env;
}

/**
 * How the image runs a container whose command is `command` (one of image/bin/'s entrypoints): for a
 * pod the test plays, such as a listener pod, so that its command goes through the image's wrapper.
 */
export function imageProcess(command: readonly string[]): {
  command: string;
  args: string[];
  env: Record<string, string>;
} {
  if (command.length === 0)
    throw new Error('the pod names no command; the image has no default the test knows');
  return { command: command[0], args: command.slice(1), env: imageEnvironment() };
}

export interface PodIdentity {
  name: string;
  namespace: string;
  serviceAccountName: string;
}

export interface ContainerOptions {
  /**
   * The image reproduced from the Dockerfile (image-build.ts) instead of the checkout: its ENV, its
   * WORKDIR as the working folder, its /usr/local/bin on PATH, its paths under its root.
   */
  image?: ReproducedImage;
  /**
   * Folders standing in for volumes, by mount path (what an init container filled, a ConfigMap). An
   * env value naming a path under a mount (`NODE_PATH`, `ARO_EXTENSIONS`) names the folder instead.
   */
  mounts?: Record<string, string>;
}

/** `value` with each path under a mount (a whole `:`- or `,`-separated item's start) moved to its folder. */
function translateMountPaths(value: string, mounts: Record<string, string>): string {
  let out = value;
  for (const [mountPath, folder] of Object.entries(mounts)) {
    const escaped = mountPath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`(^|[:,])${escaped}(?=/|$|[:,])`, 'g'), (_m, lead: string) => lead + folder);
  }
  return out;
}

export interface ContainerProcess {
  pod: PodIdentity;
  child: ChildProcess;
  /** Base URL of the container port named `metrics`, as the kubelet's probes reach it. */
  url: string;
  env: Record<string, string>;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** The HTTP probe of the container (`livenessProbe` or `readinessProbe`) as the kubelet runs it. */
  probe(which: 'livenessProbe' | 'readinessProbe'): Promise<{ status: number; body: string }>;
  get(path: string): Promise<{ status: number; body: string }>;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function resolveEnv(env: V1EnvVar[], pod: PodIdentity): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of env) {
    if (e.valueFrom) {
      const field = e.valueFrom.fieldRef?.fieldPath;
      const downward: Record<string, string> = {
        'metadata.name': pod.name,
        'metadata.namespace': pod.namespace,
        'spec.serviceAccountName': pod.serviceAccountName,
      };
      if (!field || downward[field] === undefined) {
        throw new Error(`env ${e.name}: the test cannot stand in for ${JSON.stringify(e.valueFrom)}`);
      }
      out[e.name] = downward[field];
    } else {
      out[e.name] = e.value ?? '';
    }
  }
  return out;
}

/**
 * Starts container `containerName` of the Deployment as pod `pod`, against the apiserver named by
 * `kubeconfigPath` (standing in for the service account token the kubelet would mount).
 */
export async function startContainer(
  deployment: V1Deployment,
  containerName: string,
  pod: PodIdentity,
  kubeconfigPath: string,
  options: ContainerOptions = {},
): Promise<ContainerProcess> {
  const podSpec = deployment.spec?.template.spec;
  const container: V1Container | undefined = podSpec?.containers.find((c) => c.name === containerName);
  if (!podSpec || !container) throw new Error(`the Deployment has no container ${containerName}`);
  const command = [...(container.command ?? []), ...(container.args ?? [])];
  if (command.length === 0)
    throw new Error(`container ${containerName} has no command; the image has no default the test knows`);

  const workdir = mkdtempSync(join(tmpdir(), `aro-chart-${pod.name}-`));
  const volumes = new Map<string, V1Volume>((podSpec.volumes ?? []).map((v) => [v.name, v]));
  let tmpDir: string | undefined;
  const mounts = options.mounts ?? {};
  for (const mount of container.volumeMounts ?? []) {
    const volume = volumes.get(mount.name);
    if (mount.mountPath === '/tmp' && volume?.emptyDir) {
      tmpDir = join(workdir, 'tmp');
      continue;
    }
    if (mounts[mount.mountPath] !== undefined) continue;
    throw new Error(`the test cannot stand in for mount ${mount.name} at ${mount.mountPath}`);
  }

  const env = Object.fromEntries(
    Object.entries(resolveEnv(container.env ?? [], pod)).map(([k, v]) => [k, translateMountPaths(v, mounts)]),
  );
  const metricsPort = (container.ports ?? []).find((p) => p.name === 'metrics');
  if (!metricsPort) throw new Error(`container ${containerName} has no port named metrics`);
  if (env.PROBE_PORT !== String(metricsPort.containerPort)) {
    throw new Error(
      `PROBE_PORT=${env.PROBE_PORT} but the metrics containerPort is ${metricsPort.containerPort}`,
    );
  }
  const hostPort = await freePort();
  // The eviction webhook's container port, like the metrics one: a free loopback port per replica.
  const webhookPort = (container.ports ?? []).find((p) => p.name === 'webhook');
  if (webhookPort && env.EVICTION_WEBHOOK_PORT !== String(webhookPort.containerPort)) {
    throw new Error(
      `EVICTION_WEBHOOK_PORT=${env.EVICTION_WEBHOOK_PORT} but the webhook containerPort is ${webhookPort.containerPort}`,
    );
  }
  const processEnv: Record<string, string> = {
    ...env,
    PROBE_PORT: String(hostPort),
    ...(webhookPort
      ? { EVICTION_WEBHOOK_PORT: String(await freePort()), EVICTION_WEBHOOK_BIND_ADDRESS: '127.0.0.1' }
      : {}),
    // The image's environment (Dockerfile ENV) and the stand-ins described above.
    ...(options.image ? reproducedImageEnvironment(options.image) : imageEnvironment()),
    HOME: workdir,
    KUBECONFIG: kubeconfigPath,
    ...(tmpDir ? { TMPDIR: tmpDir } : {}),
  };
  if (tmpDir) mkdirSync(tmpDir);

  const logPath = join(workdir, 'output.log');
  const log = createWriteStream(logPath);
  let output = '';
  const child = spawn(command[0], command.slice(1), {
    env: processEnv,
    // The container's working folder: the image's WORKDIR (/app), which the checkout stands in for.
    cwd: options.image ? options.image.hostPath(container.workingDir ?? options.image.workdir) : REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      log.write(chunk);
    });
  }
  const exited = new Promise<number | null>((resolvePromise) =>
    child.once('exit', (code) => resolvePromise(code)),
  );
  const url = `http://127.0.0.1:${hostPort}`;
  const get = async (path: string) => {
    try {
      const res = await fetch(url + path, { signal: AbortSignal.timeout(5_000) });
      return { status: res.status, body: await res.text() };
    } catch (err) {
      return { status: 0, body: String(err) };
    }
  };
  return {
    pod,
    child,
    url,
    env: processEnv,
    output: () => output,
    probe: async (which) => {
      const probe = container[which];
      const path = probe?.httpGet?.path;
      if (!path || probe?.httpGet?.port !== 'metrics') {
        throw new Error(`${which} is not an HTTP probe on the metrics port: ${JSON.stringify(probe)}`);
      }
      return get(path);
    },
    get,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.pid !== undefined && processExists(child.pid)) child.kill(signal);
      await exited;
      await new Promise<void>((done) => log.end(done));
      rmSync(workdir, { recursive: true, force: true });
    },
  };
}

/** A kubeconfig file holding a bearer token, as the kubelet's token mount would give the pod. */
export function writeTokenKubeconfig(server: string, caPath: string, token: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'aro-chart-kubeconfig-'));
  const path = join(dir, 'kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'envtest',
        cluster: { server, 'certificate-authority-data': readFileSync(caPath).toString('base64') },
      },
    ],
    users: [{ name: 'sa', user: { token } }],
    contexts: [{ name: 'sa', context: { cluster: 'envtest', user: 'sa' } }],
    'current-context': 'sa',
  };
  writeFileSync(path, JSON.stringify(config), { mode: 0o600 });
  return path;
}
