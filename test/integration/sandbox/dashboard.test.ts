import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ListenerConfig } from '@aro/api';
import { DEFAULT_PAT, startSimulator } from '../../../apps/simulator/src';
import { ManagedProcess } from '../../harness/processes';
import { createTestNamespace, waitFor } from '../../harness';
import { bootControllerApp, createRunnerForApp } from '../controller-app/boot';
import { createScaleSet } from '../ephemeral-runner/fixture';
import { LISTENER_MAIN } from '../../sandbox/apps';
import { freePort } from '../../harness/ports';
import { chartAlertRules } from '../charts/alert-rules';

const DASHBOARD = join(__dirname, '..', '..', '..', 'charts', 'aro-controller', 'dashboards', 'aro.json');

interface Panel {
  title: string;
  panels?: Panel[];
  targets?: Array<{ expr: string }>;
}

/** Every metric name a PromQL expression reads (functions, keywords and label names left out). */
export function metricNames(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '').replace(/\[[^\]]*\]/g, '');
  const withoutGrouping = withoutLabels.replace(/\b(by|without)\s*\([^)]*\)/g, '');
  const words = withoutGrouping.match(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\)|$|\s|[*+/-]|,))/g) ?? [];
  const functions = new Set(['sum', 'max', 'min', 'avg', 'rate', 'increase', 'histogram_quantile', 'count']);
  return [...new Set(words.filter((w) => !functions.has(w) && /_/.test(w)))];
}

/** Histograms are served under their base name; queries read `_bucket`, `_sum`, `_count`. */
function baseName(metric: string): string {
  return metric.replace(/_(bucket|sum|count)$/, '');
}

/** Every metric the dashboard's panels and the chart's alert rules read. */
async function dashboardMetrics(): Promise<string[]> {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const exprs = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const alerts = (await chartAlertRules()).flatMap((g) => g.rules.map((r) => r.expr));
  return [...new Set([...exprs, ...alerts].flatMap(metricNames).map(baseName))].sort();
}

/** Names a /metrics page declares (`# TYPE name kind`), whether or not a sample has been recorded yet. */
function served(page: string): Set<string> {
  return new Set([...page.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
}

/** ARO's listener metrics; every other aro_* name is the controller's. */
const LISTENER_ARO_PREFIXES = ['aro_job_', 'aro_listener_session_'];

/** Which app serves a metric: the listener's gha_* set and ARO's listener ones, or the controller. */
function servedBy(metric: string): 'listener' | 'controller' {
  if (LISTENER_ARO_PREFIXES.some((prefix) => metric.startsWith(prefix))) return 'listener';
  return metric.startsWith('gha_') && !metric.startsWith('gha_controller_') ? 'listener' : 'controller';
}

describe("charts/aro-controller/dashboards/aro.json and the chart's alert rules", () => {
  it('reads metric names out of PromQL', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, route) (rate(actions_request_duration_seconds_bucket[5m])))',
      ),
    ).toEqual(['actions_request_duration_seconds_bucket']);
    expect(metricNames('sum by (name) (gha_desired_runners{namespace=~"$namespace"})')).toEqual([
      'gha_desired_runners',
    ]);
  });

  it('queries only metrics the running controller serves', async () => {
    const namespace = await createTestNamespace('dash');
    const sim = await startSimulator();
    // Leader election on and a runner to reconcile: some metrics are registered only once the
    // controller leads (leader_election_*) or has called the Actions service (actions_*).
    const app = await bootControllerApp({
      WATCH_NAMESPACE: namespace,
      LEADER_ELECTION: 'true',
      LEADER_ELECTION_NAMESPACE: namespace,
      LEADER_ELECTION_ID: `dashboard-${namespace}`,
    });
    try {
      await createRunnerForApp(sim, namespace, 'dashboard-runner');
      const page = await waitFor(
        async () => {
          const body = (await app.get('/metrics')).body;
          return served(body).has('actions_requests_total') ? body : undefined;
        },
        { description: 'the controller to call the Actions service for its runner', timeoutMs: 60_000 },
      );
      const names = served(page);
      const wanted = (await dashboardMetrics()).filter((m) => servedBy(m) === 'controller');
      expect(wanted.filter((m) => !names.has(m))).toEqual([]);
      expect(wanted.length).toBeGreaterThan(5);
    } finally {
      await app.close();
      await sim.stop();
    }
  });

  it('queries only metrics the running listener serves', async () => {
    const sim = await startSimulator();
    const dir = mkdtempSync(join(tmpdir(), 'aro-dashboard-listener-'));
    let listener: ManagedProcess | undefined;
    try {
      const scaleSetId = await createScaleSet(sim, 'dashboard');
      const port = await freePort();
      const config: ListenerConfig = {
        configure_url: sim.configUrl({ org: 'octo' }),
        github_token: DEFAULT_PAT,
        ephemeral_runner_set_namespace: await createTestNamespace('dash-listener'),
        ephemeral_runner_set_name: 'dashboard',
        max_runners: 2,
        min_runners: 0,
        runner_scale_set_id: scaleSetId,
        runner_scale_set_name: 'dashboard',
        metrics_addr: `127.0.0.1:${port}`,
        metrics_endpoint: '/metrics',
      };
      writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
      listener = await ManagedProcess.start({
        name: 'listener',
        binary: process.execPath,
        args: ['-r', '@swc-node/register', LISTENER_MAIN],
        logFile: join(dir, 'listener.log'),
        env: {
          ...process.env,
          LISTENER_CONFIG_PATH: join(dir, 'config.json'),
          KUBECONFIG: process.env.ARO_TEST_KUBECONFIG ?? '',
        },
      });
      const started = listener;
      const page = await waitFor(
        async () => {
          if (!started.running) throw new Error(`the listener exited: ${started.logTail(20)}`);
          const res = await fetch(`http://127.0.0.1:${port}/metrics`);
          return res.ok ? res.text() : undefined;
        },
        { description: 'the listener to serve /metrics', timeoutMs: 90_000, intervalMs: 500 },
      );
      const names = served(page);
      const wanted = (await dashboardMetrics()).filter((m) => servedBy(m) === 'listener');
      expect(wanted.filter((m) => !names.has(m))).toEqual([]);
    } finally {
      await listener?.stop(10_000);
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
