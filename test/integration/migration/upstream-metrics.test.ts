import type { RunningSimulator } from '../../../apps/simulator/src';
import { createTestNamespace, testKubeConfig, waitFor } from '../../harness';
import { startTestSimulator } from '../ephemeral-runner/fixture';
import { type BootedApp, bootControllerApp, createRunnerForApp } from '../controller-app/boot';

/*
 * What upstream's controller manager serves on --metrics-addr (controller-runtime v0.24, client-go):
 * each family with its type and label names, so dashboards and alerts written against upstream read
 * ARO's /metrics unchanged. Histograms' `le` is left out of the label names.
 */
const upstreamFamilies: Record<string, { type: string; labels: string[] }> = {
  controller_runtime_reconcile_total: { type: 'counter', labels: ['controller', 'result'] },
  controller_runtime_reconcile_errors_total: { type: 'counter', labels: ['controller'] },
  controller_runtime_terminal_reconcile_errors_total: { type: 'counter', labels: ['controller'] },
  controller_runtime_reconcile_panics_total: { type: 'counter', labels: ['controller'] },
  controller_runtime_reconcile_timeouts_total: { type: 'counter', labels: ['controller'] },
  controller_runtime_reconcile_time_seconds: { type: 'histogram', labels: ['controller'] },
  controller_runtime_max_concurrent_reconciles: { type: 'gauge', labels: ['controller'] },
  controller_runtime_active_workers: { type: 'gauge', labels: ['controller'] },
  workqueue_depth: { type: 'gauge', labels: ['controller', 'name', 'priority'] },
  workqueue_adds_total: { type: 'counter', labels: ['controller', 'name'] },
  workqueue_queue_duration_seconds: { type: 'histogram', labels: ['controller', 'name'] },
  workqueue_work_duration_seconds: { type: 'histogram', labels: ['controller', 'name'] },
  workqueue_unfinished_work_seconds: { type: 'gauge', labels: ['controller', 'name'] },
  workqueue_longest_running_processor_seconds: { type: 'gauge', labels: ['controller', 'name'] },
  workqueue_retries_total: { type: 'counter', labels: ['controller', 'name'] },
  rest_client_requests_total: { type: 'counter', labels: ['code', 'host', 'method'] },
  leader_election_master_status: { type: 'gauge', labels: ['name'] },
};
/** Declared, but with a series only once it happened (client-go's slow path). */
const declaredOnly: Record<string, string> = { leader_election_slowpath_total: 'counter' };
/** upstream's controller names: controller-runtime names a controller by its kind, lowercased. */
const upstreamControllers = [
  'autoscalinglistener',
  'autoscalingrunnerset',
  'ephemeralrunner',
  'ephemeralrunnerset',
];

interface Family {
  type?: string;
  labelSets: Array<Record<string, string>>;
}

/** The Prometheus text exposition, by family; a histogram's series under its own name. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { labelSets: [] }));
    return f;
  };
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) family(type[1]).type = type[2];
    if (line === '' || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${line}`);
    const [, sampleName, labelText = ''] = sample;
    const labels = Object.fromEntries(
      [...labelText.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    const histogram = /^(.*)_(bucket|sum|count)$/.exec(sampleName);
    const name = histogram && families.get(histogram[1])?.type === 'histogram' ? histogram[1] : sampleName;
    delete labels.le;
    family(name).labelSets.push(labels);
  }
  return families;
}

describe("The controller's /metrics, against upstream's names and labels", () => {
  let sim: RunningSimulator;
  let app: BootedApp | undefined;

  beforeAll(async () => {
    sim = await startTestSimulator();
  });
  afterAll(async () => {
    await app?.close();
    await sim?.stop();
  });

  it('serves every family upstream serves, with its type and exactly its labels', async () => {
    const namespace = await createTestNamespace('upstream-metrics');
    app = await bootControllerApp({ WATCH_NAMESPACE: namespace, LEADER_ELECTION_NAMESPACE: namespace });
    await app.manager.elected();
    await createRunnerForApp(sim, namespace, 'metrics-runner');
    let families = new Map<string, Family>();
    // A reconcile that made the pod has been counted, and the queue has been worked.
    await waitFor(
      async () => {
        families = parseExposition((await app!.get('/metrics')).body);
        return (families.get('workqueue_work_duration_seconds')?.labelSets.length ?? 0) > 0;
      },
      { description: 'a reconcile worked off the queue and counted' },
    );

    for (const [name, expected] of Object.entries(upstreamFamilies)) {
      const family = families.get(name);
      expect({ name, type: family?.type }).toEqual({ name, type: expected.type });
      expect({ name, series: (family?.labelSets.length ?? 0) > 0 }).toEqual({ name, series: true });
      for (const labels of family!.labelSets) {
        expect({ name, labels: Object.keys(labels).sort() }).toEqual({ name, labels: expected.labels });
      }
    }
    for (const [name, type] of Object.entries(declaredOnly)) {
      expect({ name, type: families.get(name)?.type }).toEqual({ name, type });
    }

    const controllers = families
      .get('controller_runtime_max_concurrent_reconciles')!
      .labelSets.map((l) => l.controller)
      .sort();
    expect(controllers).toEqual(upstreamControllers);
    // A queue is named after its controller, as controller-runtime names it.
    for (const labels of families.get('workqueue_adds_total')!.labelSets) {
      expect(labels.name).toBe(labels.controller);
    }
    expect(families.get('workqueue_depth')!.labelSets.every((l) => l.priority === '0')).toBe(true);
    // One count per request to the API server, by status code, HTTP method and the server's host:port.
    const apiserver = new URL(testKubeConfig().getCurrentCluster()!.server).host;
    expect(families.get('rest_client_requests_total')!.labelSets).toEqual(
      expect.arrayContaining([
        { code: '200', method: 'GET', host: apiserver },
        { code: '201', method: 'POST', host: apiserver },
      ]),
    );
  });
});
