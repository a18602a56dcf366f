import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Secret } from '@kubernetes/client-node';
import { EphemeralRunner, EphemeralRunnerKind } from '@aro/api';
import { KubeClient, PodKind, SecretKind, isNotFound } from '@aro/kube';
import { DEFAULT_PAT, RunningSimulator } from '../../apps/simulator/src';
import {
  createTestNamespace,
  runnerContainerRunning,
  runnerContainerTerminated,
  testKubeConfig,
  waitFor,
} from '../../test/harness';
import { BootedApp, bootControllerApp } from '../../test/integration/controller-app/boot';
import { createScaleSet, startTestSimulator } from '../../test/integration/ephemeral-runner/fixture';
import { MOUNTED_FILE_VAULT } from './file-credentials.module';

describe('The file-credentials example extension', () => {
  let sim: RunningSimulator;
  let app: BootedApp | undefined;
  let dir: string;

  beforeAll(async () => {
    sim = await startTestSimulator();
    dir = await mkdtemp(join(tmpdir(), 'aro-file-credentials-'));
    await mkdir(join(dir, 'org-pat'));
    await writeFile(join(dir, 'org-pat', 'github_token'), `${DEFAULT_PAT}\n`);
    process.env.ARO_FILE_CREDENTIALS_DIR = dir;
  });
  afterAll(async () => {
    delete process.env.ARO_FILE_CREDENTIALS_DIR;
    await app?.close();
    await sim?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('runs a runner through its whole lifecycle with the token from a mounted file and no Secret', async () => {
    const namespace = await createTestNamespace('example-files');
    app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'false',
      ARO_EXTENSIONS: './examples/file-credentials/file-credentials.module',
    });
    const kube = new KubeClient(testKubeConfig());
    await kube.create<EphemeralRunner>(EphemeralRunnerKind, {
      apiVersion: 'actions.github.com/v1alpha1',
      kind: 'EphemeralRunner',
      metadata: { name: 'from-files', namespace },
      spec: {
        githubConfigUrl: sim.configUrl({ org: 'octo' }),
        githubConfigSecret: 'org-pat',
        vaultConfig: { type: MOUNTED_FILE_VAULT },
        runnerScaleSetId: await createScaleSet(sim, `files-${namespace}`),
        spec: { containers: [{ name: 'runner', image: 'r' }] },
      },
    });

    // Registered with the file's token: the registration exists and the pod was made.
    await waitFor(
      () =>
        kube.get(PodKind, namespace, 'from-files').then(
          () => true,
          () => false,
        ),
      {
        description: 'the runner pod',
      },
    );
    expect(sim.runner('from-files')).toBeDefined();
    await runnerContainerRunning(namespace, 'from-files');
    await waitFor(
      async () =>
        (await kube.get<EphemeralRunner>(EphemeralRunnerKind, namespace, 'from-files')).status?.phase ===
        'Pending',
      { description: 'the runner Pending' },
    );

    // The job ran; the runner exits 0 and deregisters itself; the controller deletes what is left.
    sim.runnerExited('from-files', 0);
    await runnerContainerTerminated(namespace, 'from-files', 0, { phase: 'Succeeded' });
    await waitFor(
      () =>
        kube.get(EphemeralRunnerKind, namespace, 'from-files').then(
          () => false,
          (e: unknown) => (isNotFound(e) ? true : Promise.reject(e)),
        ),
      { description: 'the EphemeralRunner gone' },
    );
    expect(sim.runner('from-files')).toBeUndefined();

    // No GitHub Secret was ever in the namespace: only the runner's own jitconfig secret came and went.
    const secrets = await kube.list<V1Secret>(SecretKind, { namespace });
    expect(secrets.filter((s) => s.type !== 'kubernetes.io/service-account-token')).toEqual([]);
  });
});
