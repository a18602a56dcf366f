import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';

/*
 * nest-cli.json is the one description of the product's projects: the apps the image runs (each built on
 * its own into dist/apps/<name>) and the libs they compile in. The build iterates the applications it
 * lists, so what it lists is what `npm run build` makes and the image can hold. The development programs
 * under apps/ are named in DEVELOPMENT_APPS instead. tools/nest-projects.spec.ts fails when a folder
 * under apps/ or libs/ is in neither list (or in both), or a listed project is not there, so the file
 * cannot fall out of date the way it once did (and was deleted).
 */

export const REPO_ROOT = resolve(__dirname, '..');

const projectSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('application'),
    root: z.string().regex(/^apps\/[^/]+$/),
    sourceRoot: z.string(),
    entryFile: z.string().min(1),
    compilerOptions: z.object({ tsConfigPath: z.string().min(1) }),
  }),
  z.object({
    type: z.literal('library'),
    root: z.string().regex(/^libs\/[^/]+$/),
    sourceRoot: z.string(),
    entryFile: z.string().min(1),
  }),
]);

const nestCliSchema = z.object({
  monorepo: z.literal(true),
  projects: z.record(z.string(), projectSchema),
});

export type NestProject = z.infer<typeof projectSchema>;
export type NestApplication = Extract<NestProject, { type: 'application' }>;

/**
 * Programs under apps/ that serve development, not the product: each runs from its TypeScript source by
 * its own npm script (folder -> script), is never compiled by `npm run build`, and so can never reach
 * the image. The simulator is a plain Node program (no Nest), used by the tests, the benches and the
 * sandbox in their own process.
 */
export const DEVELOPMENT_APPS: Readonly<Record<string, string>> = { 'apps/simulator': 'simulator' };

/** The projects nest-cli.json lists, by name; throws naming the field when the file is malformed. */
export function readNestProjects(repoRoot = REPO_ROOT): Record<string, NestProject> {
  const parsed = nestCliSchema.safeParse(JSON.parse(readFileSync(join(repoRoot, 'nest-cli.json'), 'utf8')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`nest-cli.json: ${problems}`);
  }
  return parsed.data.projects;
}

/** The applications nest-cli.json lists, in its order: what `npm run build` compiles. */
export function nestApplications(repoRoot = REPO_ROOT): Array<[string, NestApplication]> {
  return Object.entries(readNestProjects(repoRoot)).filter(
    (entry): entry is [string, NestApplication] => entry[1].type === 'application',
  );
}

/** The project folders on disk: every directory under apps/ and libs/. */
export function projectFoldersOnDisk(repoRoot = REPO_ROOT): string[] {
  return ['apps', 'libs'].flatMap((parent) =>
    existsSync(join(repoRoot, parent))
      ? readdirSync(join(repoRoot, parent), { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => `${parent}/${entry.name}`)
      : [],
  );
}
