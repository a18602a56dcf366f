import { Registry } from 'prom-client';
import type { EphemeralRunner, EphemeralRunnerPhase } from '@aro/api';
import { silentLogger } from '@aro/observability';
import { EphemeralRunnerPhaseMetrics } from './phase-metrics';

const runner = (name: string, url = 'https://github.com/octo/hello'): EphemeralRunner => ({
  metadata: {
    name,
    namespace: 'ns',
    labels: { 'actions.github.com/scale-set-name': 'set', 'actions.github.com/scale-set-namespace': 'ns' },
  },
  spec: { githubConfigUrl: url, githubConfigSecret: 's', runnerScaleSetId: 1 },
});

async function gauge(registry: Registry, phase: string): Promise<number> {
  const metric = await registry.getSingleMetric(`gha_controller_${phase}_ephemeral_runners`)!.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

describe('EphemeralRunnerPhaseMetrics', () => {
  it('moves a runner between phase gauges on each transition and drops it on deletion', async () => {
    const registry = new Registry();
    const metrics = new EphemeralRunnerPhaseMetrics(silentLogger, registry);
    const r = runner('r1');
    metrics.publish(r, 'Pending');
    metrics.publish(runner('r2'), 'Pending');
    expect(await gauge(registry, 'pending')).toBe(2);
    metrics.publish(r, 'Running');
    expect(await gauge(registry, 'pending')).toBe(1);
    expect(await gauge(registry, 'running')).toBe(1);
    metrics.publish(r, 'Running' as EphemeralRunnerPhase);
    expect(await gauge(registry, 'running')).toBe(1);
    metrics.publish(r, '');
    expect(await gauge(registry, 'running')).toBe(0);
    expect(await gauge(registry, 'pending')).toBe(1);
  });

  it('labels the gauges with the scale set and the parsed config URL', async () => {
    const registry = new Registry();
    new EphemeralRunnerPhaseMetrics(silentLogger, registry).publish(runner('r1'), 'Failed');
    const text = await registry.getSingleMetricAsString('gha_controller_failed_ephemeral_runners');
    expect(text).toContain(
      'gha_controller_failed_ephemeral_runners{name="set",namespace="ns",repository="hello",organization="octo",enterprise=""} 1',
    );
  });

  it('does not count a runner whose config URL cannot be parsed', async () => {
    const registry = new Registry();
    new EphemeralRunnerPhaseMetrics(silentLogger, registry).publish(runner('r1', 'not a url'), 'Pending');
    expect(await gauge(registry, 'pending')).toBe(0);
  });

  it("leaves a set's runners out of the gauges the set publishes, and counts them in the others", async () => {
    const registry = new Registry();
    const metrics = new EphemeralRunnerPhaseMetrics(silentLogger, registry);
    const owned = runner('owned');
    owned.metadata!.ownerReferences = [
      {
        apiVersion: 'actions.github.com/v1alpha1',
        kind: 'EphemeralRunnerSet',
        name: 'set',
        uid: 'u',
        controller: true,
      },
    ];
    metrics.publish(owned, 'Pending');
    metrics.publish(runner('alone'), 'Pending');
    expect(await gauge(registry, 'pending')).toBe(1);
    metrics.publish(owned, 'Running');
    expect(await gauge(registry, 'running')).toBe(0);
    metrics.publish(owned, 'Succeeded');
    expect(await gauge(registry, 'succeeded')).toBe(1);
    metrics.publish(owned, '');
    expect(await gauge(registry, 'succeeded')).toBe(0);
  });
});
