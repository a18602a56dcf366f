import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startSimulator, type RunningSimulator } from '../../../apps/simulator/src';
import { ControlPlane } from '../../harness/control-plane';
import {
  listPods,
  podReady,
  runnerProgramContainer,
  waitUntil,
  FatalWait,
} from '../../harness/node/product-on-node';
import { freePort } from '../../harness/ports';
import { scaled } from '../../harness/time-scale';
import { helmAt } from '../charts/helm-chart';
import { describeOnRealNode } from './availability';
import { getJson } from './product-state';
import {
  GITHUB_ORIGIN,
  README,
  helmInstall,
  pointAtSimulator,
  readQuickstart,
  runsOn,
  setValues,
  type QuickstartCommand,
} from './quickstart';

/** Jest's bound on the scenario (install, jobs, uninstall), at the run's time scale. */
jest.setTimeout(scaled(900_000));
/** ...and on the node's start: packages, kubelet and images are found cached after the first run. */
const NODE_TIMEOUT_MS = scaled(1_800_000);
/** A container of the product started on a loaded 2-core machine, image present: seconds to minutes. */
const CONTAINER_START_MS = 60_000;

/*
 * The README's "Install on a cluster", run as written (quickstart.ts says what a test must change and
 * reads the commands from the README itself): the image, the two `helm install`s, jobs queued for the
 * label of the README's workflow, the `helm uninstall`s, then nothing left on the cluster or on GitHub.
 * The cluster is the test control plane with a real node (kubelet, containerd); GitHub is the simulator.
 */
describeOnRealNode("The README's quickstart on a real node", () => {
  let plane: ControlPlane;
  let simulator: RunningSimulator;
  let simulatorOrigin = '';
  let regions: QuickstartCommand[][];
  const tagged: string[] = [];
  const work = mkdtempSync(join(tmpdir(), 'aro-quickstart-'));
  const log = (line: string): void => void process.stderr.write(`[quickstart] ${line}\n`);

  beforeAll(async () => {
    regions = readQuickstart();
    // No CRDs installed beforehand: the controller chart's `helm install` installs them, as on a new cluster.
    plane = await ControlPlane.start({ node: true, handleSignals: true, log });
    const node = plane.node;
    if (!node) throw new Error('no real node');
    const port = await freePort();
    simulatorOrigin = `http://${await node.exposeHostPort(port, 'simulator')}`;
    simulator = await startSimulator({ port, publicUrl: simulatorOrigin });
  }, NODE_TIMEOUT_MS);

  afterAll(async () => {
    // The node's containerd root is kept between runs: the README's tag must not pin an old image there.
    if (plane?.node && tagged.length > 0) {
      await plane.node.exec(plane.node.ctr('images', 'rm', ...tagged)).catch(() => undefined);
    }
    await simulator?.stop();
    await plane?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  /** Runs the harness's helm as the README's reader runs helm: from the repository, at the cluster. */
  function runHelm(args: string[]): Promise<string> {
    return helmAt(plane.info.kubeconfigPath, work, args, scaled(600_000));
  }

  /** The runner container of the test: the simulator's runner program instead of upstream's runner. */
  function runnerValuesFile(): string {
    const node = plane.node;
    if (!node) throw new Error('no real node');
    const file = join(work, 'runner-values.json');
    const template = {
      spec: {
        containers: [runnerProgramContainer(node.info.images.runner)],
      },
    };
    writeFileSync(file, JSON.stringify({ template }));
    return file;
  }

  /** One command of the README, with quickstart.ts's substitutions. */
  async function run(command: QuickstartCommand): Promise<void> {
    const node = plane.node;
    if (!node) throw new Error('no real node');
    log(`README: ${command.line}`);
    if (command.kind === 'image-build') {
      // The harness built this Dockerfile (build-images.sh, `buildah bud` of the repository root).
      expect(command.context).toBe('.');
      await node.exec(node.ctr('images', 'tag', '--force', node.info.images.aro, command.ref));
      tagged.push(command.ref);
      return;
    }
    if (command.kind === 'image-push') {
      expect(tagged).toContain(command.ref);
      return;
    }
    const args = pointAtSimulator(command.args, simulatorOrigin);
    const install = helmInstall(args);
    if (install?.chart === 'charts/aro-scale-set') {
      prepareGitHub(setValues(command.args));
      args.push('--values', runnerValuesFile());
    }
    log(await runHelm(args));
  }

  /** The README's organization (or repository) and token, made to exist on the simulated GitHub. */
  function prepareGitHub(values: Map<string, string>): void {
    const url = values.get('githubConfigUrl') ?? '';
    const token = values.get('githubConfigSecret.github_token');
    if (!url.startsWith(`${GITHUB_ORIGIN}/`) || !token) {
      throw new Error(`the README's scale set sets no github.com githubConfigUrl and token: ${url}`);
    }
    const [org, repo] = url.slice(GITHUB_ORIGIN.length + 1).split('/');
    if (repo) simulator.createRepo(`${org}/${repo}`);
    else simulator.createOrg(org);
    simulator.addPat(token);
  }

  function installs(): { controller: string[]; scaleSet: string[] } {
    const all = regions.flat().flatMap((c) => (c.kind === 'helm' ? [helmInstall(c.args)] : []));
    const of = (chart: string): string[] => {
      const found = all.find((i) => i?.chart === chart);
      if (!found) throw new Error(`the README's quickstart installs no ${chart}`);
      return [found.release, found.namespace];
    };
    return { controller: of('charts/aro-controller'), scaleSet: of('charts/aro-scale-set') };
  }

  it('installs ARO as the README says, runs jobs for its runs-on label, and uninstalls leaving nothing', async () => {
    expect(regions.length).toBeGreaterThanOrEqual(2);
    const [install, ...uninstall] = regions;
    const kc = plane.kubeConfig();
    const { controller, scaleSet } = installs();
    const [controllerRelease, controllerNamespace] = controller;
    const [scaleSetRelease, runnerNamespace] = scaleSet;
    const node = plane.node;
    if (!node) throw new Error('no real node');

    try {
      for (const command of install) await run(command);

      await waitUntil('the controller replicas Ready', 3 * CONTAINER_START_MS, async () => {
        const pods = await listPods(
          kc,
          controllerNamespace,
          `app.kubernetes.io/instance=${controllerRelease}`,
        );
        const ready = pods.filter(podReady).length;
        return ready >= 2 ? true : `${ready} of ${pods.length} controller pods Ready`;
      });
      // The workflow's runs-on is the scale set's name on GitHub, registered by the listener's session.
      const label = runsOn(readFileSync(README, 'utf8'));
      expect(label).toBe(scaleSetRelease);
      let scaleSetId = 0;
      await waitUntil(
        `a scale set named ${label} with a listener session`,
        3 * CONTAINER_START_MS,
        async () => {
          const set = simulator.scaleSets().find((s) => s.name === label);
          const session = set && simulator.sessions().find((s) => s.scaleSetId === set.id);
          if (!set || !session)
            return `scale sets: ${
              simulator
                .scaleSets()
                .map((s) => s.name)
                .join(', ') || 'none'
            }`;
          scaleSetId = set.id;
          return true;
        },
      );

      const ids = Array.from(
        { length: 3 },
        () => simulator.enqueueJob({ scaleSetId, displayName: 'sleep=2' }).jobId,
      );
      await waitUntil('the 3 jobs completed', 5 * CONTAINER_START_MS, async () => {
        const jobs = ids.map((id) => simulator.job(id));
        const failed = jobs.filter((j) => j?.state === 'completed' && j.result !== 'succeeded');
        if (failed.length) throw new FatalWait(`jobs failed: ${failed.map((j) => j?.jobId).join(', ')}`);
        const done = jobs.filter((j) => j?.state === 'completed').length;
        return done === ids.length ? true : `${done} of ${ids.length} done`;
      });
      const runners = ids.map((id) => simulator.job(id)?.runnerName);
      expect(new Set(runners).size).toBe(ids.length);
      expect(runners.every((name) => name?.startsWith(`${label}-`))).toBe(true);

      for (const command of uninstall.flat()) await run(command);

      await waitUntil('nothing left on the cluster or on GitHub', 2 * CONTAINER_START_MS, async () => {
        const left = [
          ...(await leftIn(kc, runnerNamespace, RUNNER_NAMESPACE_KINDS)),
          ...(await leftIn(kc, controllerNamespace, CONTROLLER_NAMESPACE_KINDS)),
          ...simulator.registrations({ scaleSetId }).map((r) => `registration ${r.name}`),
          ...(simulator.scaleSet(scaleSetId) ? [`scale set ${label} on GitHub`] : []),
        ];
        return left.length === 0 ? true : left.join('; ');
      });
      expect((await runHelm(['list', '--all-namespaces', '--short'])).trim()).toBe('');
    } catch (err) {
      const logs = await node.containerLogs().catch((e: Error) => `(no container logs: ${e.message})`);
      throw new Error(`${(err as Error).message}\n--- container logs on the node ---\n${logs}`, {
        cause: err,
      });
    }
  });
});

/** What an install leaves in each namespace, by API path; `default` service accounts and CA maps aside. */
const RUNNER_NAMESPACE_KINDS = [
  'apis/actions.github.com/v1alpha1/autoscalingrunnersets',
  'apis/actions.github.com/v1alpha1/ephemeralrunnersets',
  'apis/actions.github.com/v1alpha1/ephemeralrunners',
  'api/v1/pods',
  'api/v1/secrets',
  'api/v1/serviceaccounts',
  'apis/rbac.authorization.k8s.io/v1/roles',
  'apis/rbac.authorization.k8s.io/v1/rolebindings',
];
const CONTROLLER_NAMESPACE_KINDS = [
  'apis/actions.github.com/v1alpha1/autoscalinglisteners',
  'api/v1/pods',
  'api/v1/secrets',
  'api/v1/serviceaccounts',
];

async function leftIn(kc: KubeConfig, namespace: string, kinds: readonly string[]): Promise<string[]> {
  const left: string[] = [];
  for (const kind of kinds) {
    const [group, ...rest] = kind.split('/');
    const resource = rest[rest.length - 1];
    const path = `/${group}/${rest.slice(0, -1).join('/')}/namespaces/${namespace}/${resource}`;
    const list = await getJson<{ items: { metadata: { name: string } }[] }>(kc, path);
    for (const item of list.items) {
      if (resource === 'serviceaccounts' && item.metadata.name === 'default') continue;
      left.push(`${resource} ${namespace}/${item.metadata.name}`);
    }
  }
  return left;
}
