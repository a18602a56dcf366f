import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * The docs check: every relative link in the README, the top-level Markdown files, docs/ and the
 * charts' and apps' READMEs points at a file of the repository, every `#anchor` at a heading of the page
 * it names, and no page sends its reader to a path outside the repository (a design folder beside the
 * checkout is not there for someone who cloned it). Written by hand, in a few lines: a Markdown link
 * checker from the registry would add a dependency tree and network checks this needs none of.
 */
const root = resolve(__dirname, '..');

function markdownFiles(): string[] {
  const files = readdirSync(root)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, f));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir)) {
      if (entry === 'node_modules' || entry.startsWith('.')) continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (entry.endsWith('.md')) files.push(path);
    }
  };
  for (const dir of ['docs', 'charts', 'apps', 'libs', 'examples', 'bench', 'test']) {
    if (existsSync(join(root, dir))) walk(join(root, dir));
  }
  return files;
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .replace(/`/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** `[text](target)` links outside code fences and inline code; absolute URLs and mail links skipped. */
function linksOf(markdown: string): string[] {
  const links: string[] = [];
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const text = line.replace(/`[^`]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      links.push(target);
    }
  }
  return links;
}

describe('the docs', () => {
  const files = markdownFiles();

  it('are found', () => {
    expect(files.map((f) => relative(root, f))).toEqual(expect.arrayContaining(['README.md']));
  });

  it('link only to files and headings that exist in the repository', () => {
    const broken: string[] = [];
    for (const file of files) {
      const markdown = readFileSync(file, 'utf8');
      for (const link of linksOf(markdown)) {
        const [pathPart, anchor] = link.split('#', 2);
        const target = pathPart === '' ? file : resolve(dirname(file), decodeURIComponent(pathPart));
        const where = `${relative(root, file)} -> ${link}`;
        if (!target.startsWith(root + '/') && target !== root) {
          broken.push(`${where}: outside the repository`);
          continue;
        }
        if (!existsSync(target)) {
          broken.push(`${where}: no such file`);
          continue;
        }
        if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(anchor)) {
          broken.push(`${where}: no such heading`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('name no path outside the repository as a place to read', () => {
    const outside: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (/(^|[\s`(])(\.\.\/)*shared\/(design|seed)\//.test(line)) {
            outside.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`);
          }
        });
    }
    expect(outside).toEqual([]);
  });
});
