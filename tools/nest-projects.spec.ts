import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, nestApplications, projectFoldersOnDisk, readNestProjects } from './nest-projects';

/** Every app and lib of the monorepo against nest-cli.json, in both directions. */
function mismatches(repoRoot: string): { unlisted: string[]; missing: string[] } {
  const listed = Object.values(readNestProjects(repoRoot)).map((p) => p.root);
  const onDisk = projectFoldersOnDisk(repoRoot);
  return {
    unlisted: onDisk.filter((folder) => !listed.includes(folder)).sort(),
    missing: listed.filter((root) => !onDisk.includes(root)).sort(),
  };
}

describe('nest-cli.json', () => {
  it('lists every folder under apps/ and libs/, and nothing else', () => {
    expect(mismatches(REPO_ROOT)).toEqual({ unlisted: [], missing: [] });
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
      expect(mismatches(root)).toEqual({ unlisted: ['apps/new-app'], missing: ['libs/kube'] });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
