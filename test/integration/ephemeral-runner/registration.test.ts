import type { CoreV1Event, V1Pod, V1Secret } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { EventKind, PodKind, SecretKind } from '@aro/kube';
import { DEFAULT_PAT } from '../../../apps/simulator/src';
import { runnerContainerRunning, runnerContainerTerminated, waitFor } from '../../harness';
import {
  ControllerFixture,
  controllerSuite,
  createScaleSet,
  idleReconcileCount,
  reconcileCounts,
} from './fixture';

const b64 = (s: string | undefined) => Buffer.from(s ?? '', 'base64').toString('utf8');

describe('EphemeralRunner registration', () => {
  const suite = controllerSuite();
  let f: ControllerFixture;

  it('replaces a stale registration of the same scale set and registers again', async () => {
    f = await suite.start({ start: false });
    const stale = await suite
      .actions()
      .generateJitRunnerConfig({ name: 'reg-a', workFolder: '' }, f.scaleSetId);
    await f.createRunner('reg-a');
    await f.manager.start();
    await f.waitForPod('reg-a', (p) => p !== undefined, 'the runner pod');
    const registration = suite.sim.runner('reg-a');
    expect(registration?.id).not.toBe(stale.runner.id);
    expect(b64((await f.secret('reg-a'))?.data?.runnerId)).toBe(String(registration?.id));
  });

  it('deletes the EphemeralRunner when its name is registered to another scale set', async () => {
    f = await suite.start({ start: false });
    const otherSet = await createScaleSet(suite.sim, `foreign-${Date.now()}`);
    const foreign = await suite
      .actions()
      .generateJitRunnerConfig({ name: 'reg-b', workFolder: '' }, otherSet);
    await f.createRunner('reg-b');
    await f.manager.start();
    await f.waitForRunner('reg-b', (r) => r === undefined, 'the EphemeralRunner to be deleted');
    expect(suite.sim.runner('reg-b')?.id).toBe(foreign.runner.id);
  });

  it('replaces a jitconfig secret with an invalid runner ID when no pod uses it', async () => {
    f = await suite.start({ start: false });
    const created = await f.createRunner('reg-c');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'reg-c', namespace: f.namespace },
      stringData: { jitToken: 'x', runnerId: 'not-a-number', runnerName: 'reg-c' },
    });
    await f.manager.start();
    await f.waitForPod('reg-c', (p) => p !== undefined, 'the runner pod');
    const secret = await f.secret('reg-c');
    expect(b64(secret?.data?.runnerId)).toBe(String(suite.sim.runner('reg-c')?.id));
    expect(secret?.metadata?.ownerReferences?.[0]?.uid).toBe(created.metadata?.uid);
  });

  it('keeps a jitconfig secret with an invalid runner ID while a pod exists', async () => {
    f = await suite.start({ start: false });
    await f.createRunner('reg-d');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'reg-d', namespace: f.namespace },
      stringData: { jitToken: 'x', runnerId: '-4', runnerName: 'reg-d' },
    });
    await f.kube.create<V1Pod>(PodKind, {
      metadata: { name: 'reg-d', namespace: f.namespace },
      spec: { containers: [{ name: 'runner', image: 'r' }] },
    });
    await f.manager.start();
    // Keeping both is said with a Warning Event naming the secret and the key (evidence that the
    // controller looked), and looked at again on a slow backoff, not thrown as an error.
    const event = await waitFor(
      async () => {
        const list = await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace });
        return list.find((e) => e.involvedObject?.name === 'reg-d' && e.reason === 'CorruptJitConfigSecret');
      },
      { description: 'a CorruptJitConfigSecret event on reg-d' },
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toContain(`${f.namespace}/reg-d`);
    expect(event.message).toContain('"runnerId"');
    expect((await reconcileCounts(f)).errors).toBe(0);
    expect(b64((await f.secret('reg-d'))?.data?.runnerId)).toBe('-4');
    expect(suite.sim.runner('reg-d')).toBeUndefined();
  });

  it('registers the runner again when its jitconfig secret was deleted before the next pod is created', async () => {
    f = await suite.start();
    await f.createRunner('reg-h');
    const firstPod = await f.waitForPod('reg-h', (p) => p !== undefined, 'the runner pod');
    await runnerContainerRunning(f.namespace, 'reg-h');
    const pending = await f.waitForRunner('reg-h', (r) => r?.status?.phase === 'Pending', 'phase Pending');
    const firstId = pending?.status?.runnerId;
    expect(firstId).toBe(suite.sim.runner('reg-h')?.id);

    // The pod already started from the secret; the next one cannot start without it.
    await f.kube.delete(SecretKind, f.namespace, 'reg-h');
    await runnerContainerTerminated(f.namespace, 'reg-h', 1, { phase: 'Failed', reason: 'Error' });
    const secondPod = await f.waitForPod(
      'reg-h',
      (p) => p !== undefined && p.metadata?.uid !== firstPod?.metadata?.uid,
      'a new pod with another UID',
    );
    const secret = await f.secret('reg-h');
    const registration = suite.sim.runner('reg-h');
    expect(registration?.id).toBeDefined();
    expect(registration?.id).not.toBe(firstId);
    expect(b64(secret?.data?.runnerId)).toBe(String(registration?.id));
    const jitEnv = secondPod?.spec?.containers
      .find((c) => c.name === 'runner')
      ?.env?.find((e) => e.valueFrom?.secretKeyRef?.name === 'reg-h');
    expect(jitEnv).toBeDefined();
    expect(suite.sim.registrations().filter((r) => r.name === 'reg-h')).toHaveLength(1);
  });

  it('defaults the uncached reader to the client: an invalid jitconfig secret without a pod is replaced', async () => {
    // setupEphemeralRunnerController given no apiReader, as upstream's SetupWithManager defaults it.
    f = await suite.start({ start: false, withoutApiReader: true });
    await f.createRunner('reg-e');
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'reg-e', namespace: f.namespace },
      stringData: { jitToken: 'x', runnerId: '0', runnerName: 'reg-e' },
    });
    await f.manager.start();
    await f.waitForPod('reg-e', (p) => p !== undefined, 'the runner pod');
    expect(b64((await f.secret('reg-e'))?.data?.runnerId)).toBe(String(suite.sim.runner('reg-e')?.id));
  });

  it('retries registration after the service answered with an error, without leaking registrations', async () => {
    f = await suite.start({ start: false });
    suite.sim.injectFault({ route: 'POST runnerscalesets/{id}/generatejitconfig', status: 500, times: 3 });
    await f.createRunner('reg-f');
    await f.manager.start();
    await f.waitForPod('reg-f', (p) => p !== undefined, 'the runner pod');
    expect(suite.sim.registrations().filter((r) => r.name === 'reg-f')).toHaveLength(1);
  });

  it('records a Warning event on the runner when the credentials secret is missing, and recovers once it exists', async () => {
    f = await suite.start({ start: false });
    await f.createRunner('reg-g', (spec) => {
      spec.githubConfigSecret = 'absent-secret';
    });
    await f.manager.start();
    const events = await waitFor(
      async () => {
        const list = await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace });
        const forRunner = list.filter(
          (e) => e.involvedObject?.name === 'reg-g' && e.reason === 'RegistrationFailed',
        );
        return forRunner.length > 0 ? forRunner : undefined;
      },
      { description: 'a RegistrationFailed event on reg-g' },
    );
    expect(events[0].message).toContain('absent-secret');
    // Every retry repeats the failure: one Event whose count grows, not an Event per retry.
    await waitFor(
      async () => {
        const list = await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace });
        const forRunner = list.filter(
          (e) => e.involvedObject?.name === 'reg-g' && e.reason === 'RegistrationFailed',
        );
        return forRunner.length === 1 && (forRunner[0].count ?? 0) >= 2;
      },
      { description: 'one RegistrationFailed event on reg-g with a count of 2 or more' },
    );
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'absent-secret', namespace: f.namespace },
      stringData: { github_token: DEFAULT_PAT },
    });
    await f.waitForPod('reg-g', (p) => p !== undefined, 'the runner pod once the secret exists');
    const runner = await f.kube.get<EphemeralRunner>(EphemeralRunnerKind, f.namespace, 'reg-g');
    expect(runner.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('asks the service once, not once per runner and retry, about a credential it refuses', async () => {
    f = await suite.start({ start: false });
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'wrong-pat', namespace: f.namespace },
      stringData: { github_token: 'ghp_not-a-token-the-simulator-knows' },
    });
    const names = ['cred-a', 'cred-b', 'cred-c'];
    for (const name of names) {
      await f.createRunner(name, (spec) => {
        spec.githubConfigSecret = 'wrong-pat';
      });
    }
    suite.sim.resetCallCounts();
    await f.manager.start();
    // Evidence that every runner tried, and tried again: RegistrationFailed counted twice on each.
    await waitFor(
      async () => {
        const list = await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace });
        const failures = (name: string) =>
          list
            .filter((e) => e.involvedObject?.name === name && e.reason === 'RegistrationFailed')
            .reduce((sum, e) => sum + (e.count ?? 1), 0);
        return names.every((name) => failures(name) >= 2);
      },
      { description: 'RegistrationFailed counted twice on each of the three runners' },
    );
    // Two reconciles run at once, so two may ask before the first answer comes back; no more.
    expect(suite.sim.callCount('POST orgs/{org}/actions/runners/registration-token')).toBeLessThanOrEqual(2);
    expect(suite.sim.callCount('POST orgs/{org}/actions/runners/registration-token')).toBeGreaterThanOrEqual(
      1,
    );
  });

  it('retries a refused credential on a slow per-runner backoff, not as reconcile errors', async () => {
    f = await suite.start({ start: false });
    await f.kube.create<V1Secret>(SecretKind, {
      metadata: { name: 'wrong-pat', namespace: f.namespace },
      stringData: { github_token: 'ghp_not-a-token-the-simulator-knows' },
    });
    await f.createRunner('cred-slow', (spec) => {
      spec.githubConfigSecret = 'wrong-pat';
    });
    suite.sim.resetCallCounts();
    await f.manager.start();
    const attempts = async () =>
      (await f.kube.list<CoreV1Event>(EventKind, { namespace: f.namespace }))
        .filter((e) => e.involvedObject?.name === 'cred-slow' && e.reason === 'RegistrationFailed')
        .reduce((sum, e) => sum + (e.count ?? 1), 0);
    // Evidence that the controller tried, and came back to try again.
    await waitFor(async () => (await attempts()) >= 2, {
      description: 'RegistrationFailed counted twice on cred-slow',
    });
    // Each attempt asks the service at most once (fewer: the resolver remembers the refusal) ...
    const tokenCalls = suite.sim.callCount('POST orgs/{org}/actions/runners/registration-token');
    expect(tokenCalls).toBeGreaterThanOrEqual(1);
    expect(tokenCalls).toBeLessThanOrEqual(await attempts());
    // ... and the retries were requeued on the runner's own backoff, not thrown into the error backoff
    // (read once the controller is idle, so that a reconcile in flight has been counted).
    await idleReconcileCount(f);
    expect((await reconcileCounts(f)).errors).toBe(0);
  });
});
