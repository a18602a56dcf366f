import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * The README's install commands, read from the README at test time so the front page cannot rot: every
 * fenced `sh` block between `<!-- quickstart:begin -->` and `<!-- quickstart:end -->`, its `\`
 * continuations joined, comments and blank lines dropped, each command split as a POSIX shell would
 * split it (quotes, no expansions). A command of a form this file does not know fails the test, naming
 * it: a new step in the README must be taught here, not skipped.
 *
 * What a test must change, and nothing else (applied by the real-node quickstart test):
 *
 * | README                         | on the test's node                                                   |
 * | ------------------------------ | -------------------------------------------------------------------- |
 * | `docker build -t <ref> .`      | the harness's `buildah bud` of the same Dockerfile (build-images.sh), tagged `<ref>` in the node's containerd |
 * | `docker push <ref>`            | nothing: the node's containerd already holds `<ref>`, so the kubelet pulls nothing |
 * | `helm ...`                     | the harness's helm (HELM_BIN, PATH or the build cache), KUBECONFIG the test control plane's |
 * | `https://github.com` in a value | the simulator's origin as pods reach it; the README's owner and token are created on the simulator |
 * | `helm install` of aro-scale-set | one `--values` file appended: the runner container runs the simulator's runner program |
 */

export const README = resolve(__dirname, '..', '..', '..', 'README.md');
export const GITHUB_ORIGIN = 'https://github.com';

export type QuickstartCommand =
  | { kind: 'image-build'; ref: string; context: string; line: string }
  | { kind: 'image-push'; ref: string; line: string }
  | { kind: 'helm'; args: string[]; line: string };

/** The commands of each quickstart region, in order; one inner array per region. */
export function quickstartRegions(markdown: string): QuickstartCommand[][] {
  const regions: QuickstartCommand[][] = [];
  const found = markdown.matchAll(/<!-- quickstart:begin -->([\s\S]*?)<!-- quickstart:end -->/g);
  for (const [, body] of found) {
    const lines: string[] = [];
    for (const [, block] of body.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
      lines.push(...joinContinuations(block));
    }
    regions.push(lines.map(parseCommand));
  }
  if (regions.length === 0) throw new Error('the README has no <!-- quickstart:begin --> region');
  return regions;
}

export function readQuickstart(path = README): QuickstartCommand[][] {
  return quickstartRegions(readFileSync(path, 'utf8'));
}

function joinContinuations(block: string): string[] {
  const commands: string[] = [];
  let current = '';
  for (const raw of block.split('\n')) {
    const line = raw.trim();
    if (!current && (line === '' || line.startsWith('#'))) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    commands.push(`${current}${line}`.trim());
    current = '';
  }
  if (current) throw new Error(`a quickstart command ends with a continuation: ${current}`);
  return commands;
}

/** POSIX word splitting of one line: single and double quotes, backslash escapes; nothing expanded. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = undefined;
      else if (c === '\\' && quote === '"' && i + 1 < line.length) word = (word ?? '') + line[++i];
      else word = (word ?? '') + c;
    } else if (c === "'" || c === '"') {
      quote = c;
      word ??= '';
    } else if (c === '\\' && i + 1 < line.length) {
      word = (word ?? '') + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (/[;&|<>$`]/.test(c)) {
      // The README's commands are plain ones; a pipe, a redirection or an expansion would need a shell
      // this file does not pretend to be.
      throw new Error(`the quickstart command uses shell syntax (${c}) the test does not run: ${line}`);
    } else {
      word = (word ?? '') + c;
    }
  }
  if (quote) throw new Error(`unbalanced ${quote} in the quickstart command: ${line}`);
  if (word !== undefined) words.push(word);
  return words;
}

function parseCommand(line: string): QuickstartCommand {
  const words = shellWords(line);
  const [program, ...args] = words;
  if (program === 'helm') return { kind: 'helm', args, line };
  if (program === 'docker' && args[0] === 'build') {
    const tag = args.findIndex((a) => a === '-t' || a === '--tag');
    const rest = args.filter((_, i) => i !== 0 && i !== tag && i !== tag + 1);
    if (tag > 0 && args[tag + 1] && rest.length === 1) {
      return { kind: 'image-build', ref: args[tag + 1], context: rest[0], line };
    }
  }
  if (program === 'docker' && args[0] === 'push' && args.length === 2) {
    return { kind: 'image-push', ref: args[1], line };
  }
  throw new Error(`the README's quickstart has a command the test does not know how to run: ${line}`);
}

/** A `helm install`'s release, chart and namespace, as helm reads them. */
export interface HelmInstall {
  release: string;
  chart: string;
  namespace: string;
}

export function helmInstall(args: readonly string[]): HelmInstall | undefined {
  if (args[0] !== 'install') return undefined;
  const positional: string[] = [];
  let namespace = 'default';
  for (let i = 1; i < args.length; i++) {
    const a = args[i];
    if (a === '--namespace' || a === '-n') namespace = args[++i];
    else if (a.startsWith('--namespace=')) namespace = a.slice('--namespace='.length);
    else if (a === '--set' || a === '--set-string' || a === '--set-json' || a === '-f' || a === '--values')
      i++;
    else if (!a.startsWith('-')) positional.push(a);
  }
  const [release, chart] = positional;
  return release && chart ? { release, chart, namespace } : undefined;
}

/** The `--set key=value` values of a helm command, by key. */
export function setValues(args: readonly string[]): Map<string, string> {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const pair = args[i] === '--set' ? args[i + 1] : args[i].startsWith('--set=') ? args[i].slice(6) : '';
    const eq = pair?.indexOf('=') ?? -1;
    if (pair && eq > 0) values.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return values;
}

/** Replaces the GitHub origin in every argument: the README's URL, pointed at the simulator. */
export function pointAtSimulator(args: readonly string[], simulatorOrigin: string): string[] {
  return args.map((a) => a.split(GITHUB_ORIGIN).join(simulatorOrigin));
}

/** The `runs-on:` label of the README's example workflow. */
export function runsOn(markdown: string): string {
  const match = /^\s*runs-on:\s*(\S+)\s*$/m.exec(markdown);
  if (!match) throw new Error('the README shows no workflow with runs-on');
  return match[1];
}
