import { Test } from '@nestjs/testing';
import { ObservabilityModule } from '@aro/observability';
import { Registry } from 'prom-client';
import { ActionsModule } from './actions.module';
import { MultiClient } from './multi-client';

describe('ActionsModule', () => {
  it('provides one MultiClient that registers its metrics in the app registry', async () => {
    const registry = new Registry();
    const moduleRef = await Test.createTestingModule({
      imports: [ObservabilityModule.forRoot({ level: 'silent', registry }), ActionsModule.forRoot({})],
    }).compile();
    const multi = moduleRef.get(MultiClient);
    expect(multi).toBe(moduleRef.get(MultiClient));
    multi.getClientFor({
      configUrl: 'https://github.com/org',
      namespace: 'ns',
      credentials: { kind: 'pat', token: 't' },
    });
    expect(registry.getSingleMetric('actions_requests_total')).toBeDefined();
    await multi.close();
    await moduleRef.close();
  });
});
