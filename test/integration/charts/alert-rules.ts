import { CHARTS, findManifest, render } from './helm-chart';

export interface AlertRule {
  alert: string;
  expr: string;
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

/** The alert rules charts/aro-controller ships (prometheusRule.enabled), with its default thresholds. */
export async function chartAlertRules(): Promise<RuleGroup[]> {
  const manifests = await render(CHARTS.controller, {
    release: 'aro',
    namespace: 'aro-system',
    set: { 'prometheusRule.enabled': 'true' },
  });
  const rule = findManifest(manifests, 'PrometheusRule');
  return (rule.spec as { groups: RuleGroup[] }).groups;
}
