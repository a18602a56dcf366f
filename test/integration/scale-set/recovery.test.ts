import type { V1Secret } from '@kubernetes/client-node';
import {
  Annotations,
  AutoscalingRunnerSet,
  AutoscalingRunnerSetKind,
  EphemeralRunnerSetKind,
} from '@aro/api';
import { SecretKind } from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { waitFor } from '../../harness';
import {
  GITHUB_SECRET,
  ScaleSetFixture,
  runnerPodTemplate,
  scaleSetSuite,
  serviceClient,
  uniqueName,
} from './fixture';

jest.setTimeout(180_000);

/**
 * The AutoscalingRunnerSet's backoff and its recovery, seen from outside: service calls counted by the
 * simulator over a window, times measured from the user's fix to the set being Running.
 */
describe('AutoscalingRunnerSet backoff and recovery', () => {
  const suite = scaleSetSuite();
  let f: ScaleSetFixture;

  function newScaleSet(name: string, change?: (ars: AutoscalingRunnerSet) => void): AutoscalingRunnerSet {
    const ars: AutoscalingRunnerSet = {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'AutoscalingRunnerSet',
      metadata: { name, namespace: f.namespace },
      spec: {
        githubConfigUrl: f.configUrl,
        githubConfigSecret: GITHUB_SECRET,
        maxRunners: 5,
        minRunners: 0,
        template: { spec: runnerPodTemplate() },
      },
    };
    change?.(ars);
    return ars;
  }

  const readArs = (name: string) => f.read<AutoscalingRunnerSet>(AutoscalingRunnerSetKind, name);
  const readyCondition = async (name: string) =>
    (await readArs(name))?.status?.conditions?.find((c) => c.type === 'ScaleSetReady');
  const callsTo = (fragment: string) =>
    Object.entries(suite.sim.callCounts())
      .filter(([route]) => route.includes(fragment))
      .reduce((sum, [, n]) => sum + n, 0);

  it('backs off exponentially while the runner group is missing: service calls over a window follow the schedule, not a hot loop', async () => {
    const baseMs = 250;
    const maxMs = 2_000;
    f = await suite.start({ runnerScaleSet: { errorBackoffBaseMs: baseMs, errorBackoffMaxMs: maxMs } });
    const name = uniqueName('ars-backoff');
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(name, (a) => (a.spec.runnerGroup = 'no-such-group')),
    );
    await waitFor(async () => (await readyCondition(name))?.reason === 'RunnerGroupNotFound', {
      description: 'ScaleSetReady False with RunnerGroupNotFound',
    });
    const windowMs = 8_000;
    const before = callsTo('runnergroups');
    await new Promise((r) => setTimeout(r, windowMs));
    const attempts = callsTo('runnergroups') - before;
    // Attempts the schedule allows in the window: waits of 250, 500, 1000, then 2000 ms each. Each
    // attempt may cost one retried call (the fixture's Actions client retries once).
    let scheduled = 0;
    for (let t = 0, n = 1; t <= windowMs; n++) {
      scheduled++;
      t += Math.min(maxMs, baseMs * 2 ** (n - 1));
    }
    console.log(
      `ARS backoff: ${attempts} runner group lookups in ${windowMs} ms (schedule allows ${scheduled} attempts from the first; at least ${Math.floor(windowMs / maxMs)} at the cap)`,
    );
    // Still retrying (a missing group can be created), at no more than the schedule's pace.
    expect(attempts).toBeGreaterThanOrEqual(Math.floor(windowMs / maxMs) - 1);
    expect(attempts).toBeLessThanOrEqual(2 * scheduled);
    expect((await readyCondition(name))?.status).toBe('False');
  });

  it('takes a fixed credential Secret within seconds, without asking the service again while it is unchanged', async () => {
    // Backoff capped far above the test: only the Secret's change can explain a quick recovery.
    f = await suite.start({ runnerScaleSet: { errorBackoffBaseMs: 60_000, errorBackoffMaxMs: 600_000 } });
    const name = uniqueName('ars-cred');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'wrong-secret', namespace: f.namespace },
      stringData: { github_token: 'ghp_wrong' },
    });
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(name, (a) => (a.spec.githubConfigSecret = 'wrong-secret')),
    );
    await waitFor(async () => (await readyCondition(name))?.reason === 'InvalidCredentials', {
      description: 'ScaleSetReady False with InvalidCredentials',
    });
    // While the Secret stays wrong the service is not asked again (the backoff holds).
    const callsBefore = Object.values(suite.sim.callCounts()).reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, 3_000));
    const callsWhileWrong = Object.values(suite.sim.callCounts()).reduce((a, b) => a + b, 0) - callsBefore;
    expect(callsWhileWrong).toBe(0);

    const fixedAt = Date.now();
    await f.kube.mergePatch(SecretKind, f.namespace, 'wrong-secret', {
      stringData: { github_token: DEFAULT_PAT },
    });
    await waitFor(
      async () => {
        const ars = await readArs(name);
        return ars?.metadata?.annotations?.[Annotations.runnerScaleSetId] && ars.status?.phase === 'Running';
      },
      { description: 'the set Running on a scale set after the fix', timeoutMs: 30_000 },
    );
    const tookMs = Date.now() - fixedAt;
    console.log(
      `ARS recovery: fixed credential Secret to Running in ${tookMs} ms (backoff at that point: 60 s)`,
    );
  });

  it('takes a credential Secret created after the set within seconds', async () => {
    f = await suite.start({ runnerScaleSet: { errorBackoffBaseMs: 60_000, errorBackoffMaxMs: 600_000 } });
    const name = uniqueName('ars-nosecret');
    await f.kube.create(
      AutoscalingRunnerSetKind,
      newScaleSet(name, (a) => (a.spec.githubConfigSecret = 'late-secret')),
    );
    const failed = await waitFor(
      async () => {
        const c = await readyCondition(name);
        return c?.status === 'False' ? c : undefined;
      },
      { description: 'ScaleSetReady False for the missing Secret' },
    );
    const createdAt = Date.now();
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'late-secret', namespace: f.namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    await waitFor(async () => (await readArs(name))?.status?.phase === 'Running', {
      description: 'the set Running once its Secret exists',
      timeoutMs: 30_000,
    });
    console.log(
      `ARS recovery: missing Secret (${failed.reason}) created, Running in ${Date.now() - createdAt} ms`,
    );
  });

  it('creates a scale set the service deleted again within seconds of its listener reporting the 404, with the periodic check minutes away', async () => {
    f = await suite.start({ runnerScaleSet: { scaleSetCheckIntervalMs: 5 * 60_000 } });
    const name = uniqueName('ars-gone');
    await f.kube.create(AutoscalingRunnerSetKind, newScaleSet(name));
    const ars = await waitFor(
      async () => {
        const a = await readArs(name);
        return a?.status?.phase === 'Running' && a.metadata?.annotations?.[Annotations.runnerScaleSetId]
          ? a
          : undefined;
      },
      { description: 'the set Running on a scale set', timeoutMs: 60_000 },
    );
    const oldId = Number(ars.metadata!.annotations![Annotations.runnerScaleSetId]);
    await serviceClient(suite.sim).deleteRunnerScaleSet(oldId);
    // What the listener does on a 404 from its session create (apps/listener/src/scaler.ts).
    const reportedAt = Date.now();
    await f.kube.mergePatch(EphemeralRunnerSetKind, f.namespace, name, {
      metadata: { annotations: { [Annotations.scaleSetMissing]: String(oldId) } },
    });
    const newId = await waitFor(
      async () => {
        const id = Number((await readArs(name))?.metadata?.annotations?.[Annotations.runnerScaleSetId]);
        return id && id !== oldId ? id : undefined;
      },
      { description: 'a new scale set ID long before the 5 min check', timeoutMs: 30_000 },
    );
    console.log(
      `ARS recovery: scale set ${oldId} deleted on the service, ${newId} created ${Date.now() - reportedAt} ms after the listener's report`,
    );
    expect(suite.sim.scaleSets().find((s) => s.name === name)?.id).toBe(newId);
  });
});
