import { execFile } from 'node:child_process';
import { Hash, createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { promisify } from 'node:util';
import {
  DockerStage,
  Dockerfile,
  commandArgs,
  copyArgs,
  inBuildContext,
  keyValues,
  readDockerfile,
} from './dockerfile';
import { REPO_ROOT } from './helm-chart';

/*
 * The ARO image without a container runtime: the Dockerfile's stages reproduced as folders, each an
 * image filesystem root, by following the Dockerfile's own instructions.
 *
 * - A stage whose every RUN the checkout has already done (`npm ci` by the shared install, `npm run
 *   build` by ensureImageAppsBuilt) is stood in for by the checkout: its WORKDIR is the repository.
 * - Any other stage is run for real: COPY from the build context (refused if .dockerignore leaves the
 *   file out) or from an earlier stage, RUN with `sh -c` in the stage's WORKDIR, with the pinned Node
 *   first on PATH and HOME (so npm's cache) inside the stage. Its result is kept under
 *   ~/.cache/aro/image-stages/<hash of its instructions and inputs>, as Docker's layer cache would,
 *   so `npm ci --omit=dev` (~15 s and the registry) runs once per lockfile.
 * - The last stage is the image, assembled fresh for each caller.
 *
 * An instruction the test does not know how to stand in for fails, so a Dockerfile change that the
 * test would silently skip cannot happen.
 */

const run = promisify(execFile);

/** RUN commands of a build stage that the checkout has already done, and who did it. */
const DONE_BY_CHECKOUT: Record<string, string> = {
  'npm ci --no-audit --no-fund': 'the shared `npm ci` of node_modules',
  'npm run build': 'ensureImageAppsBuilt (`npm run build`)',
};

const STAGE_CACHE = join(homedir(), '.cache', 'aro', 'image-stages');

export interface ReproducedImage {
  /** The image's filesystem root; `hostPath('/app')` is the image's /app. */
  root: string;
  hostPath(imagePath: string): string;
  /** The image's ENV, values as in the image (paths inside it). */
  env: Record<string, string>;
  workdir: string;
  user: string;
  cmd: string[];
  /** The Node version of the base image (`node:<version>-slim`). */
  nodeVersion: string;
  remove(): void;
}

interface StageState {
  /** Folder holding the stage's filesystem; for the checkout stand-in, mapping its WORKDIR instead. */
  hostPath(imagePath: string): string;
  env: Record<string, string>;
  workdir: string;
  user: string;
  cmd: string[];
}

function nodeVersionOf(base: string): string {
  const m = /^node:(\d+\.\d+\.\d+)-slim$/.exec(base);
  if (!m) throw new Error(`base image ${base} is not node:<version>-slim; the test knows no other`);
  return m[1];
}

function rooted(root: string): (imagePath: string) => string {
  return (imagePath) => {
    if (!posix.isAbsolute(imagePath)) throw new Error(`${imagePath} is not an absolute image path`);
    return join(root, imagePath);
  };
}

function isCheckoutStage(stage: DockerStage): boolean {
  const runs = stage.instructions.filter((i) => i.keyword === 'RUN');
  return runs.length > 0 && runs.every((i) => i.args in DONE_BY_CHECKOUT);
}

/** The checkout standing in for a build stage: its WORKDIR is the repository after the same steps. */
function checkoutStage(stage: DockerStage): StageState {
  let workdir = '/';
  for (const i of stage.instructions) {
    if (i.keyword === 'WORKDIR') workdir = posix.resolve(workdir, i.args);
    else if (i.keyword === 'COPY') {
      const { from, sources } = copyArgs(i.args);
      if (from) throw new Error(`line ${i.line}: the checkout cannot stand in for COPY --from`);
      for (const source of sources) {
        if (!existsSync(join(REPO_ROOT, source)))
          throw new Error(`line ${i.line}: COPY of ${source}, absent from the repository`);
        if (!inBuildContext(source))
          throw new Error(`line ${i.line}: ${source} is left out by .dockerignore`);
      }
    } else if (i.keyword !== 'RUN') {
      throw new Error(`line ${i.line}: the checkout cannot stand in for ${i.keyword} in a build stage`);
    }
  }
  const stageWorkdir = workdir;
  return {
    hostPath: (imagePath) => {
      const relative = posix.relative(stageWorkdir, imagePath);
      if (relative.startsWith('..')) throw new Error(`${imagePath} is outside ${stageWorkdir}, the checkout`);
      return join(REPO_ROOT, relative);
    },
    env: {},
    workdir,
    user: 'root',
    cmd: [],
  };
}

function copy(from: string, to: string, toIsFolder: boolean): void {
  const target = toIsFolder ? join(to, from.split('/').pop() ?? '') : to;
  mkdirSync(dirname(target), { recursive: true });
  if (statSync(from).isDirectory()) {
    // COPY of a folder copies its contents into the destination.
    mkdirSync(to, { recursive: true });
    cpSync(from, to, { recursive: true, preserveTimestamps: true });
  } else {
    cpSync(from, target, { preserveTimestamps: true });
  }
}

/**
 * What the build host gives a build to reach the registry, as `docker build` would through its
 * proxy settings and build secrets: proxies, extra CA certificates, the user's npm configuration
 * (registry, cafile). Nothing of the rest of the test's environment reaches a stage.
 */
function builderNetwork(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (
      value !== undefined &&
      /^(https?_proxy|no_proxy|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR)$/i.test(key)
    )
      out[key] = value;
  }
  const npmrc = join(homedir(), '.npmrc');
  if (existsSync(npmrc)) out.npm_config_userconfig = npmrc;
  return out;
}

/**
 * Runs a stage's instructions in `root`; with `execute` false (a stage found in the cache) only
 * follows them to know the stage's WORKDIR, ENV, USER and CMD.
 */
async function runStage(
  stage: DockerStage,
  root: string,
  earlier: Map<string, StageState>,
  log: (line: string) => void,
  execute = true,
): Promise<StageState> {
  const hostPath = rooted(root);
  const state: StageState = { hostPath, env: {}, workdir: '/', user: 'root', cmd: [] };
  const nodeBin = dirname(process.execPath);
  for (const i of stage.instructions) {
    switch (i.keyword) {
      case 'WORKDIR':
        state.workdir = posix.resolve(state.workdir, i.args);
        if (execute) mkdirSync(hostPath(state.workdir), { recursive: true });
        break;
      case 'ENV':
        Object.assign(state.env, keyValues(i.args));
        break;
      case 'USER':
        state.user = i.args;
        break;
      case 'CMD':
        state.cmd = commandArgs(i.args);
        break;
      case 'ENTRYPOINT':
        if (commandArgs(i.args).length > 0)
          throw new Error(`line ${i.line}: the test runs the chart's command; it knows no ENTRYPOINT`);
        break;
      case 'LABEL':
        break;
      case 'COPY': {
        if (!execute) break;
        const { from, sources, dest } = copyArgs(i.args);
        const destImage = posix.resolve(state.workdir, dest);
        const toFolder = dest.endsWith('/') || sources.length > 1;
        for (const source of sources) {
          let hostSource: string;
          if (from) {
            const stageFrom = earlier.get(from);
            if (!stageFrom) throw new Error(`line ${i.line}: COPY --from=${from}, no such stage before`);
            hostSource = stageFrom.hostPath(source);
          } else {
            if (!inBuildContext(source.replace(/\/+$/, '')))
              throw new Error(`line ${i.line}: ${source} is left out of the build context by .dockerignore`);
            hostSource = join(REPO_ROOT, source);
          }
          if (!existsSync(hostSource)) throw new Error(`line ${i.line}: COPY of ${source}: not found`);
          copy(hostSource, hostPath(destImage), toFolder);
        }
        break;
      }
      case 'RUN': {
        if (!execute) break;
        log(`image stage ${stage.name ?? '(final)'}: RUN ${i.args}`);
        mkdirSync(hostPath('/root'), { recursive: true });
        await run('/bin/sh', ['-c', i.args], {
          cwd: hostPath(state.workdir),
          env: {
            ...builderNetwork(),
            ...state.env,
            PATH: [nodeBin, '/usr/local/bin', '/usr/bin', '/bin'].join(':'),
            HOME: hostPath('/root'),
            // npm's cache inside the stage, as in a container: `npm cache clean` cleans only it.
            npm_config_cache: hostPath('/root/.npm'),
          },
          timeout: 10 * 60_000,
          maxBuffer: 16 * 1024 * 1024,
        });
        break;
      }
      default:
        throw new Error(`line ${i.line}: the test cannot stand in for ${i.keyword}`);
    }
  }
  return state;
}

/** Names and contents of a file, or of every file under a folder. */
function hashPath(hash: Hash, path: string, name: string): void {
  if (!existsSync(path)) {
    hash.update(`${name}:absent`);
  } else if (statSync(path).isDirectory()) {
    for (const entry of readdirSync(path).sort()) hashPath(hash, join(path, entry), `${name}/${entry}`);
  } else {
    hash.update(name);
    hash.update(readFileSync(path));
  }
}

/** What a stage's result depends on: its text, its base, and the content of what it copies. */
function stageKey(stage: DockerStage, earlierKeys: Map<string, string>): string {
  const hash = createHash('sha256').update(JSON.stringify({ base: stage.base, i: stage.instructions }));
  hash.update(process.version);
  for (const i of stage.instructions.filter((x) => x.keyword === 'COPY')) {
    const { from, sources } = copyArgs(i.args);
    if (from) {
      hash.update(earlierKeys.get(from) ?? from);
      continue;
    }
    for (const source of sources) hashPath(hash, join(REPO_ROOT, source), source);
  }
  return hash.digest('hex').slice(0, 16);
}

/** Keeps the newest few results of a stage (other worktrees may be on another lockfile), ~120 MB each. */
function pruneStageCache(stageName: string, keep = 3): void {
  const done = readdirSync(STAGE_CACHE)
    .filter((entry) => entry.startsWith(`${stageName}-`) && existsSync(join(STAGE_CACHE, entry, '.complete')))
    .map((entry) => ({ entry, at: statSync(join(STAGE_CACHE, entry, '.complete')).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const { entry } of done.slice(keep))
    rmSync(join(STAGE_CACHE, entry), { recursive: true, force: true });
}

/**
 * Builds the image of the repository's Dockerfile into a fresh folder. The checkout must be built
 * (ensureImageAppsBuilt) first. The caller removes it (`remove()`).
 */
export async function reproduceImage(log: (line: string) => void): Promise<ReproducedImage> {
  const dockerfile: Dockerfile = readDockerfile();
  const states = new Map<string, StageState>();
  const keys = new Map<string, string>();
  const last = dockerfile.stages[dockerfile.stages.length - 1];
  mkdirSync(STAGE_CACHE, { recursive: true });
  for (const stage of dockerfile.stages.slice(0, -1)) {
    nodeVersionOf(stage.base);
    if (!stage.name) throw new Error(`a stage before the last has no name (FROM ${stage.base})`);
    const key = stageKey(stage, keys);
    keys.set(stage.name, key);
    if (isCheckoutStage(stage)) {
      states.set(stage.name, checkoutStage(stage));
      continue;
    }
    const root = join(STAGE_CACHE, `${stage.name}-${key}`);
    if (!existsSync(join(root, '.complete'))) {
      rmSync(root, { recursive: true, force: true });
      const scratch = mkdtempSync(join(STAGE_CACHE, `.${stage.name}-`));
      await runStage(stage, scratch, states, log);
      writeFileSync(join(scratch, '.complete'), `${new Date().toISOString()}\n`);
      try {
        // Another run may have finished the same stage meanwhile; either copy is the same.
        await run('mv', ['-T', scratch, root]);
      } catch {
        rmSync(scratch, { recursive: true, force: true });
      }
      pruneStageCache(stage.name);
    }
    states.set(stage.name, await runStage(stage, root, states, log, false));
  }

  const root = mkdtempSync(join(STAGE_CACHE, '.image-'));
  let image: StageState;
  try {
    image = await runStage(last, root, states, log);
  } catch (err) {
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  return {
    root,
    hostPath: image.hostPath,
    env: image.env,
    workdir: image.workdir,
    user: image.user,
    cmd: image.cmd,
    nodeVersion: nodeVersionOf(last.base),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
