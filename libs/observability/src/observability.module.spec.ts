import { Test } from '@nestjs/testing';
import { Registry, register } from 'prom-client';
import { getOrCreateCounter } from './metrics';
import { LOGGER, METRICS_REGISTRY, ObservabilityModule } from './observability.module';

async function app() {
  return Test.createTestingModule({
    imports: [ObservabilityModule.forRoot({ level: 'silent', processMetrics: false })],
  }).compile();
}

describe('ObservabilityModule', () => {
  it("gives each app a registry of its own, never prom-client's global one", async () => {
    const [a, b] = [await app(), await app()];
    const registryA = a.get<Registry>(Registry);
    expect(registryA).not.toBe(b.get(Registry));
    expect(registryA).not.toBe(register);
    expect(a.get(METRICS_REGISTRY)).toBe(registryA);
    expect(a.get(LOGGER)).toBeDefined();

    getOrCreateCounter(registryA, { name: 'only_in_a_total', help: 'a counter of app a' }).inc();
    expect(await registryA.metrics()).toContain('only_in_a_total 1');
    expect(await b.get(Registry).metrics()).not.toContain('only_in_a_total');
    expect(await register.metrics()).not.toContain('only_in_a_total');
    await Promise.all([a.close(), b.close()]);
  });
});
