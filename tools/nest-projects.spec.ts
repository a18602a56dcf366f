import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEVELOPMENT_APPS,
  REPO_ROOT,
  nestApplications,
  projectFoldersOnDisk,
  readNestProjects,
} from './nest-projects';

/**
 * Every app and lib of the monorepo against nest-cli.json (the product) and the development programs,
 * in both directions: each folder in exactly one of them, each listed one on disk.
 */
function mismatches(
  repoRoot: string,
  development: readonly string[] = Object.keys(DEVELOPMENT_APPS),
): { unlisted: string[]; missing: string[]; both: string[] } {
  const listed = Object.values(readNestProjects(repoRoot)).map((p) => p.root);
  const onDisk = projectFoldersOnDisk(repoRoot);
  const known = [...listed, ...development];
  return {
    unlisted: onDisk.filter((folder) => !known.includes(folder)).sort(),
    missing: known.filter((root) => !onDisk.includes(root)).sort(),
    both: listed.filter((root) => development.includes(root)).sort(),
  };
}

describe('nest-cli.json', () => {
  it('lists every folder under apps/ and libs/ but the development programs, and nothing else', () => {
    expect(mismatches(REPO_ROOT)).toEqual({ unlisted: [], missing: [], both: [] });
  });

  it('runs each development program by an npm script of its own, from source, and builds none', () => {
    const scripts = (
      JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    for (const [folder, script] of Object.entries(DEVELOPMENT_APPS)) {
      expect({ folder, script: scripts[script] }).toEqual({
        folder,
        script: expect.stringContaining(`${folder}/src/main.ts`),
      });
    }
    const built = nestApplications().map(([, app]) => app.root);
    expect(built.filter((root) => root in DEVELOPMENT_APPS)).toEqual([]);
  });

  it("points at each project's entry file and each application's tsconfig", () => {
    for (const [name, project] of Object.entries(readNestProjects())) {
      expect({
        name,
        entry: existsSync(join(REPO_ROOT, project.sourceRoot, `${project.entryFile}.ts`)),
      }).toEqual({
        name,
        entry: true,
      });
    }
    for (const [name, app] of nestApplications()) {
      expect({ name, tsconfig: existsSync(join(REPO_ROOT, app.compilerOptions.tsConfigPath)) }).toEqual({
        name,
        tsconfig: true,
      });
    }
  });

  it('names an app or lib that exists but is not listed, and a listed one that is gone', () => {
    const root = mkdtempSync(join(tmpdir(), 'nest-projects-'));
    try {
      for (const folder of ['apps/controller/src', 'apps/new-app/src', 'libs/api/src']) {
        mkdirSync(join(root, folder), { recursive: true });
      }
      writeFileSync(
        join(root, 'nest-cli.json'),
        JSON.stringify({
          monorepo: true,
          projects: {
            controller: {
              type: 'application',
              root: 'apps/controller',
              sourceRoot: 'apps/controller/src',
              entryFile: 'main',
              compilerOptions: { tsConfigPath: 'apps/controller/tsconfig.app.json' },
            },
            api: { type: 'library', root: 'libs/api', sourceRoot: 'libs/api/src', entryFile: 'index' },
            kube: { type: 'library', root: 'libs/kube', sourceRoot: 'libs/kube/src', entryFile: 'index' },
          },
        }),
      );
      expect(mismatches(root, [])).toEqual({ unlisted: ['apps/new-app'], missing: ['libs/kube'], both: [] });
      // A product app also named a development program would be built into the image after all.
      expect(mismatches(root, ['apps/controller', 'apps/new-app'])).toEqual({
        unlisted: [],
        missing: ['libs/kube'],
        both: ['apps/controller'],
      });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
