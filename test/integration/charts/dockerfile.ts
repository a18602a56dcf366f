import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helm-chart';

/*
 * The repository's Dockerfile and .dockerignore as data: the stages, their instructions, and which
 * context paths a build may copy. The image test reproduces the stages from this, so the Dockerfile
 * is what the test runs, not a description of it that could drift.
 */

export interface DockerInstruction {
  keyword: string;
  /** The rest of the line, continuation lines joined. */
  args: string;
  line: number;
}

export interface DockerStage {
  /** `AS <name>`; the last stage (the image) usually has none. */
  name?: string;
  /** The base image, build arguments expanded. */
  base: string;
  instructions: DockerInstruction[];
}

export interface Dockerfile {
  /** Global build arguments (ARG before the first FROM) with their defaults. */
  args: Record<string, string>;
  stages: DockerStage[];
}

function expand(text: string, args: Record<string, string>): string {
  return text.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (_whole, braced: string | undefined, bare: string | undefined) => {
      const name = braced ?? bare ?? '';
      if (!(name in args)) throw new Error(`Dockerfile: build argument ${name} has no default`);
      return args[name];
    },
  );
}

export function parseDockerfile(text: string): Dockerfile {
  const args: Record<string, string> = {};
  const stages: DockerStage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i];
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.trimEnd().endsWith('\\') && i + 1 < lines.length) {
      line = line.trimEnd().slice(0, -1) + ' ' + lines[++i].trim();
    }
    const match = /^\s*(\w+)\s+(.*)$/.exec(line);
    if (!match) throw new Error(`Dockerfile line ${start + 1}: cannot read ${JSON.stringify(line)}`);
    const keyword = match[1].toUpperCase();
    const rest = match[2].trim();
    if (keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest);
      if (!from) throw new Error(`Dockerfile line ${start + 1}: FROM ${rest}`);
      stages.push({ base: expand(from[1], args), name: from[2], instructions: [] });
    } else if (keyword === 'ARG' && stages.length === 0) {
      const [name, value] = rest.split('=', 2);
      args[name] = value ?? '';
    } else if (stages.length === 0) {
      throw new Error(`Dockerfile line ${start + 1}: ${keyword} before the first FROM`);
    } else {
      stages[stages.length - 1].instructions.push({ keyword, args: rest, line: start + 1 });
    }
  }
  return { args, stages };
}

export function readDockerfile(): Dockerfile {
  return parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));
}

/** `KEY=value` pairs of an ENV or LABEL instruction (values may be double-quoted). */
export function keyValues(args: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of args.matchAll(/(\S+?)=("(?:[^"\\]|\\.)*"|\S+)/g)) {
    out[m[1]] = m[2].startsWith('"') ? (JSON.parse(m[2]) as string) : m[2];
  }
  return out;
}

/** A COPY instruction: `--from`, the sources, the destination. */
export function copyArgs(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  let from: string | undefined;
  while (words[0]?.startsWith('--')) {
    const flag = words.shift() ?? '';
    if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
    else throw new Error(`COPY ${args}: the test cannot stand in for ${flag}`);
  }
  const dest = words.pop();
  if (!dest || words.length === 0) throw new Error(`COPY ${args}: no source or destination`);
  return { from, sources: words, dest };
}

/** An exec-form (`["a", "b"]`) or shell-form command of CMD/ENTRYPOINT. */
export function commandArgs(args: string): string[] {
  return args.startsWith('[') ? (JSON.parse(args) as string[]) : ['/bin/sh', '-c', args];
}

function globToRegExp(pattern: string): RegExp {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '*' && pattern[i + 1] === '*') {
      out += '.*';
      i++;
      if (pattern[i + 1] === '/') i++;
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${out}$`);
}

/**
 * Whether .dockerignore lets `path` (relative to the repository) into the build context, as Docker
 * decides: the last pattern matching the path or one of its parent folders wins, `!` re-includes.
 */
export function inBuildContext(path: string): boolean {
  const patterns = readFileSync(join(REPO_ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const segments = path.split('/').filter(Boolean);
  const prefixes = segments.map((_, i) => segments.slice(0, i + 1).join('/'));
  let included = true;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const pattern = (negated ? raw.slice(1) : raw).replace(/^\/+/, '').replace(/\/+$/, '');
    const re = globToRegExp(pattern);
    if (prefixes.some((p) => re.test(p))) included = negated;
  }
  return included;
}
