import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { ListenerDefaults } from '@aro/api';
import { CHARTS, REPO_ROOT, findManifest, helm, helmBinary, render, renderText } from './helm-chart';

/*
 * The charts as text: lint, the golden renders, the schema's refusals, and the CRDs kept in sync.
 * Golden files are `helm template` output for each values file under values/<chart>/; after a
 * deliberate change, regenerate them with `UPDATE_GOLDEN=1 npx jest test/integration/charts/render`
 * and review the diff like code.
 */

const VALUES = resolve(__dirname, 'values');
const GOLDEN = resolve(__dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';

const chartDir = (chart: string) => (chart === 'aro-controller' ? CHARTS.controller : CHARTS.scaleSet);
const releaseOf = (chart: string) => (chart === 'aro-controller' ? 'aro' : 'arc-runners');
const namespaceOf = (chart: string) => (chart === 'aro-controller' ? 'aro-system' : 'arc-runners');

const goldenCases = ['aro-controller', 'aro-scale-set'].flatMap((chart) =>
  readdirSync(join(VALUES, chart))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((file) => ({ chart, name: basename(file, '.yaml'), valuesFile: join(VALUES, chart, file) })),
);

const invalidCases = readdirSync(join(VALUES, 'invalid'))
  .filter((f) => f.endsWith('.yaml'))
  .sort()
  .map((file) => {
    const path = join(VALUES, 'invalid', file);
    const key = /^# key: (.+)$/m.exec(readFileSync(path, 'utf8'))?.[1];
    if (!key) throw new Error(`${path} must start with "# key: <the key helm's message names>"`);
    return { chart: file.split('.')[0], name: basename(file, '.yaml'), path, key };
  });

describe('The Helm charts', () => {
  beforeAll(async () => {
    const found = await helmBinary();
    process.stderr.write(`[helm] ${found.version} from ${found.source} (${found.path})\n`);
  }, 30 * 60_000);

  it.each([
    ['aro-controller', []],
    ['aro-scale-set', ['--values', join(CHARTS.scaleSet, 'ci', 'ci-values.yaml')]],
  ])('%s passes helm lint --strict', async (chart, extra) => {
    const result = await helm(['lint', '--strict', chartDir(chart), ...extra]);
    expect({ code: result.code, output: result.stdout + result.stderr }).toEqual({
      code: 0,
      output: expect.stringContaining('1 chart(s) linted, 0 chart(s) failed'),
    });
  });

  it.each(goldenCases.map((c) => [`${c.chart} ${c.name}`, c] as const))(
    'renders %s as the golden file says',
    async (_label, { chart, name, valuesFile }) => {
      const rendered = await renderText(chartDir(chart), {
        release: releaseOf(chart),
        namespace: namespaceOf(chart),
        valuesFiles: [valuesFile],
      });
      const golden = join(GOLDEN, chart, `${name}.yaml`);
      if (UPDATE || !existsSync(golden)) {
        if (!UPDATE) throw new Error(`no golden file ${golden}; run with UPDATE_GOLDEN=1 to create it`);
        mkdirSync(join(GOLDEN, chart), { recursive: true });
        writeFileSync(golden, rendered);
      }
      expect(rendered).toBe(readFileSync(golden, 'utf8'));
    },
  );

  it.each(invalidCases.map((c) => [c.name, c] as const))(
    'refuses the values file %s with a message naming the key',
    async (_label, { chart, path, key }) => {
      const result = await helm(['template', 'x', chartDir(chart), '--namespace', 'x', '--values', path]);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain(key);
    },
  );

  it('ships the CRDs of libs/api/crds unchanged', () => {
    const source = join(REPO_ROOT, 'libs', 'api', 'crds');
    const shipped = join(CHARTS.controller, 'crds');
    const files = (dir: string) =>
      readdirSync(dir)
        .filter((f) => /\.ya?ml$/.test(f))
        .sort();
    expect(files(shipped)).toEqual(files(source));
    for (const file of files(source)) {
      // A failure here means: cp libs/api/crds/*.yaml charts/aro-controller/crds/
      expect({ file, text: readFileSync(join(shipped, file), 'utf8') }).toEqual({
        file,
        text: readFileSync(join(source, file), 'utf8'),
      });
    }
  });

  it('names what the image has: the Node line the tests run on, the entrypoints, the user', async () => {
    const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
    };
    expect(/^ARG NODE_VERSION=(\S+)$/m.exec(dockerfile)?.[1]).toBe(pkg.devDependencies.node);
    expect(dockerfile).toMatch(/^FROM node:\$\{NODE_VERSION\}-slim$/m);

    const deployment = findManifest(
      await render(CHARTS.controller, { release: 'aro', namespace: 'aro-system' }),
      'Deployment',
    ) as unknown as {
      spec: {
        template: {
          spec: {
            securityContext: { runAsUser: number; runAsGroup: number };
            containers: Array<{ name: string; command: string[] }>;
          };
        };
      };
    };
    const pod = deployment.spec.template.spec;
    // Both commands the image is run with (the controller's, and the listener pods') are wrappers the
    // Dockerfile copies onto PATH.
    const copied = /^COPY (image\/bin\/\S+(?: image\/bin\/\S+)*) \/usr\/local\/bin\/$/m
      .exec(dockerfile)?.[1]
      .split(' ');
    for (const command of [pod.containers[0].command[0], ListenerDefaults.command[0]]) {
      expect(copied).toContain(`image/bin/${command}`);
      expect(existsSync(join(REPO_ROOT, 'image', 'bin', command))).toBe(true);
    }
    expect(/^USER (\d+):(\d+)$/m.exec(dockerfile)?.slice(1).map(Number)).toEqual([
      pod.securityContext.runAsUser,
      pod.securityContext.runAsGroup,
    ]);
  });
});
