import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { dumpYaml, loadYaml } from '@kubernetes/client-node';
import { findPromtool } from '../../harness/promtool';
import { type RuleGroup, chartAlertRules } from './alert-rules';
import { CHARTS, render } from './helm-chart';

const run = promisify(execFile);
const CASES = resolve(__dirname, 'alerts', 'aro.rules.test.yaml');

interface RuleTestFile {
  tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
}

describe("charts/aro-controller's PrometheusRule", () => {
  let dir: string;
  let promtool: string;
  let groups: RuleGroup[];

  beforeAll(async () => {
    promtool = await findPromtool();
    groups = await chartAlertRules();
    dir = mkdtempSync(join(tmpdir(), 'aro-alerts-'));
    writeFileSync(join(dir, 'aro.rules.yaml'), dumpYaml({ groups }));
    copyFileSync(CASES, join(dir, 'aro.rules.test.yaml'));
  }, 30 * 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is off unless prometheusRule.enabled', async () => {
    const manifests = await render(CHARTS.controller, { release: 'aro', namespace: 'aro-system' });
    expect(manifests.filter((m) => m.kind === 'PrometheusRule')).toEqual([]);
  });

  it('passes `promtool check rules`', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', join(dir, 'aro.rules.yaml')], {
      timeout: 60_000,
    });
    expect(stdout).toContain('SUCCESS');
  });

  it('has, for every alert, a promtool case where it fires and one where it stays silent', () => {
    const cases = (loadYaml(readFileSync(CASES, 'utf8')) as RuleTestFile).tests.flatMap(
      (t) => t.alert_rule_test ?? [],
    );
    const alerts = groups.flatMap((g) => g.rules.map((r) => r.alert));
    expect(alerts.length).toBeGreaterThanOrEqual(6);
    const missing = alerts.flatMap((alert) => {
      const own = cases.filter((c) => c.alertname === alert);
      return [
        ...(own.some((c) => (c.exp_alerts ?? []).length > 0) ? [] : [`${alert}: no case where it fires`]),
        ...(own.some((c) => (c.exp_alerts ?? []).length === 0)
          ? []
          : [`${alert}: no case where it is silent`]),
      ];
    });
    expect(missing).toEqual([]);
  });

  it('fires and stays silent as `promtool test rules` expects', async () => {
    const result = await run(promtool, ['test', 'rules', join(dir, 'aro.rules.test.yaml')], {
      timeout: 120_000,
    }).then(
      ({ stdout }) => ({ ok: true, out: stdout }),
      (err: { stdout?: string; stderr?: string }) => ({
        ok: false,
        out: `${err.stdout ?? ''}${err.stderr ?? ''}`,
      }),
    );
    if (!result.ok) throw new Error(`promtool test rules failed:\n${result.out}`);
    expect(result.out).toContain('SUCCESS');
  });
});
