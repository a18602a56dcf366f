import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CoreV1Event, V1Lease, V1Pod } from '@kubernetes/client-node';
import {
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunner,
  EphemeralRunnerKind,
  EphemeralRunnerSet,
  EphemeralRunnerSetKind,
  hasJob,
} from '@aro/api';
import { FIRST_AUDIT_DELAY_MS } from '@aro/controllers';
import { EventKind, KubeClient, LeaseKind, PodKind } from '@aro/kube';
import type { RunningSimulator } from '../../../apps/simulator/src';
import type { FleetSnapshot } from '../../../apps/controller/src/fleet/fleet-snapshot';
import {
  createTestNamespace,
  readOrUndefined,
  runnerContainerRunning,
  testKubeConfig,
  waitFor,
} from '../../harness';
import { dumpDom, screenshot } from '../../harness/browser';
import { startTestSimulator } from '../ephemeral-runner/fixture';
import { runnerPodTemplate } from '../scale-set/fixture';
import { ApiProxy } from '../kube/api-proxy';
import { BootedApp, bootControllerApp, createRunnerForApp } from './boot';

jest.setTimeout(300_000);

/** Checked once, at load: the test is skipped (and says why) on a machine without Debian's chromium. */
function chromiumOrReason(): { path?: string; reason: string } {
  const path = process.env.CHROMIUM_BIN ?? 'chromium';
  try {
    return { path, reason: execFileSync(path, ['--version'], { encoding: 'utf8', timeout: 60_000 }).trim() };
  } catch (err) {
    return { reason: `${path} is not usable (${err instanceof Error ? err.message : String(err)})` };
  }
}
const chromium = chromiumOrReason();
if (!chromium.path) {
  process.stderr.write(
    `\n*** SKIPPED: the fleet page's browser test needs Chromium: ${chromium.reason}. ` +
      'Install it with `apt-get install -y chromium` (.ci/run does) or set CHROMIUM_BIN. ***\n\n',
  );
}

/** The app's requests that are neither a watch nor the leader's Lease renewal: what a view could add. */
function readsBesidesWatchesAndLease(requests: string[]): string[] {
  return requests.filter((r) => !r.includes('watch=true') && !r.includes('/leases/'));
}

/** The value of `data-field` in the row of `rowAttr`, as the browser's DOM has it. */
function field(dom: string, rowAttr: string, name: string): string | undefined {
  const row = new RegExp(`<tr ${rowAttr}[^>]*>([\\s\\S]*?)</tr>`).exec(dom)?.[1] ?? '';
  return new RegExp(`data-field="${name}"[^>]*>([^<]*)<`).exec(row)?.[1];
}

describe('The fleet page in a real browser', () => {
  let sim: RunningSimulator;
  let app: BootedApp | undefined;
  let proxy: ApiProxy | undefined;
  // Made in beforeAll, not at collection: a run that filters this file's tests out runs no afterAll.
  let profileRoot = '';

  beforeAll(async () => {
    profileRoot = mkdtempSync(join(tmpdir(), 'aro-fleet-test-'));
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await app?.close();
    await proxy?.close();
    await sim?.stop();
    if (profileRoot) rmSync(profileRoot, { recursive: true, force: true });
  });

  (chromium.path ? it : it.skip)(
    'shows what the apiserver holds, from the caches: no API call per view',
    async () => {
      const browser = chromium.path!;
      process.stderr.write(`[fleet-page] ${chromium.reason}\n`);
      const namespace = await createTestNamespace('fleet');
      const kube = new KubeClient(testKubeConfig());
      // The secret `gh` the scale set names (createRunnerForApp makes it, with a runner of its own).
      await createRunnerForApp(sim, namespace, 'standalone');
      // The app talks to the apiserver through a proxy that lists every request it makes.
      proxy = new ApiProxy(testKubeConfig());
      await proxy.start();
      app = await bootControllerApp(
        {
          WATCH_NAMESPACE: namespace,
          LEADER_ELECTION_NAMESPACE: namespace,
          POD_NAME: 'aro-controller-fleet-0',
          FLEET_PAGE: 'true',
          // No listener image: no listener pod churns while the test counts the client's requests.
          CONTROLLER_MANAGER_CONTAINER_IMAGE: '',
        },
        { kubeConfig: proxy.kubeConfig() },
      );
      await app.manager.elected();

      await kube.create<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, {
        apiVersion: 'actions.github.com/v1alpha1',
        kind: 'AutoscalingRunnerSet',
        metadata: { name: 'web', namespace },
        spec: {
          githubConfigUrl: sim.configUrl({ org: 'octo' }),
          githubConfigSecret: 'gh',
          minRunners: 0,
          maxRunners: 5,
          template: { spec: runnerPodTemplate() },
        },
      });
      const runnerSet = await waitFor(
        async () => (await kube.list<EphemeralRunnerSet>(EphemeralRunnerSetKind, { namespace }))[0],
        { description: 'the EphemeralRunnerSet' },
      );
      // What the listener would ask for with three jobs assigned.
      await kube.mergePatch(EphemeralRunnerSetKind, namespace, runnerSet.metadata!.name!, {
        spec: { replicas: 3, patchID: 1 },
      });
      const ownRunners = async () =>
        (await kube.list<EphemeralRunner>(EphemeralRunnerKind, { namespace })).filter((r) =>
          r.metadata?.ownerReferences?.some((o) => o.uid === runnerSet.metadata?.uid),
        );
      const runners = await waitFor(
        async () => ((await ownRunners()).length === 3 ? ownRunners() : undefined),
        {
          description: 'three runners',
        },
      );
      // Their pods start (the harness plays the kubelet), and the runners register.
      for (const r of runners) {
        await waitFor(() => readOrUndefined(() => kube.get<V1Pod>(PodKind, namespace, r.metadata!.name!)), {
          description: `the pod of ${r.metadata!.name}`,
        });
        await runnerContainerRunning(namespace, r.metadata!.name!);
      }
      await waitFor(async () => (await ownRunners()).every((r) => (r.status?.runnerId ?? 0) > 0), {
        description: 'three registered runners',
      });
      await kube.mergePatchStatus(EphemeralRunnerKind, namespace, runners[0].metadata!.name!, {
        status: { jobId: 'job-1', jobRepositoryName: 'octo/web', jobDisplayName: 'build' },
      });
      await kube.create<CoreV1Event>(EventKind, {
        metadata: { name: 'web-warning', namespace },
        involvedObject: { kind: 'AutoscalingRunnerSet', name: 'web', namespace },
        type: 'Warning',
        reason: 'ListenerImageMissing',
        message: 'no listener image configured',
        count: 1,
        lastTimestamp: new Date() as unknown as CoreV1Event['lastTimestamp'],
      } as CoreV1Event);
      // The scale set's first leak audit (the sweep's own pass, soon after its first runner registered),
      // so the page has one to show and no pass of the sweep falls among the views counted below.
      await waitFor(
        async () =>
          (await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, 'web')).status
            ?.orphanSweep,
        { description: "the scale set's first leak audit", timeoutMs: FIRST_AUDIT_DELAY_MS + 20_000 },
      );

      // The caches catch up with the writes above (the page shows what they hold).
      await waitFor(
        async () => {
          const s = JSON.parse((await app!.get('/fleet.json')).body) as FleetSnapshot;
          const web = s.scaleSets.find((x) => x.name === 'web');
          return (
            web?.desiredRunners === 3 &&
            web.actualRunners === 3 &&
            web.jobsRunning === 1 &&
            web.orphanSweep !== undefined &&
            s.warnings.some((w) => w.reason === 'ListenerImageMissing')
          );
        },
        { description: "the page's snapshot caught up with the apiserver" },
      );

      // No API call per view: across ten views (the last in the browser) the app sent the apiserver
      // nothing but its watches and its Lease renewals.
      const views = 10;
      const from = proxy.requests.length;
      for (let i = 0; i < views - 1; i++) await app.get('/fleet');
      const dom = await dumpDom(browser, `${app.url}/fleet`);
      const during = proxy.requests.slice(from);
      process.stderr.write(
        `[fleet-page] the app's requests during ${views} views: ${during.length} (${during.filter((r) => r.includes('/leases/')).length} Lease renewals)\n`,
      );
      expect(readsBesidesWatchesAndLease(during)).toEqual([]);

      // What the browser shows is what the apiserver holds.
      const ers = await kube.get<EphemeralRunnerSet>(
        EphemeralRunnerSetKind,
        namespace,
        runnerSet.metadata!.name!,
      );
      const live = await ownRunners();
      const ars = await kube.get<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, namespace, 'web');
      const row = `data-scale-set="${namespace}/web"`;
      expect(field(dom, row, 'desired')).toBe(String(ers.spec.replicas));
      expect(field(dom, row, 'actual')).toBe(String(live.length));
      expect(field(dom, row, 'jobs-running')).toBe(String(live.filter(hasJob).length));
      expect(field(dom, row, 'jobs-waiting')).toBe(String(3 - live.filter(hasJob).length));
      for (const phase of ['Pending', 'Running', 'Failed']) {
        const count = live.filter((r) => (r.status?.phase || 'Pending') === phase).length;
        expect({ phase, shown: field(dom, row, `phase-${phase}`) }).toEqual({ phase, shown: String(count) });
      }
      expect(field(dom, row, 'registrations')).toBe(String(ars.status?.orphanSweep?.registrations));
      expect(field(dom, row, 'orphans')).toBe(String(ars.status?.orphanSweep?.orphans));
      const lease = await kube.get<V1Lease>(LeaseKind, namespace, 'aro-controller');
      expect(/data-field="leader"[^>]*>([^<]*)</.exec(dom)?.[1]).toBe(lease.spec?.holderIdentity);
      const warnings = (await kube.list<CoreV1Event>(EventKind, { namespace })).filter(
        (e) => e.type === 'Warning',
      );
      expect(warnings.length).toBeGreaterThan(0);
      for (const w of warnings) {
        expect(dom).toContain(
          `data-warning="${namespace}/${w.involvedObject.kind}/${w.involvedObject.name}/${w.reason}"`,
        );
      }

      const png = join(profileRoot, 'fleet-page.png');
      await screenshot(browser, `${app.url}/fleet`, png);
      expect(statSync(png).size).toBeGreaterThan(1000);
      if (process.env.ARO_UPDATE_SCREENSHOTS === '1') {
        copyFileSync(png, join(__dirname, '..', '..', '..', 'docs', 'fleet-page.png'));
        process.stderr.write(`[fleet-page] /fleet.json: ${(await app.get('/fleet.json')).body}\n`);
      }
    },
  );
});
