import { createLogger } from '@aro/observability';
import { Test } from '@nestjs/testing';
import { Registry } from 'prom-client';
import type { InformerCache } from '../cache';
import type { KubeClient } from '../client';
import { Manager } from './manager';
import { ManagerLifecycle } from './nest';

class SyncedCache {
  running = false;
  async start(): Promise<void> {
    this.running = true;
  }
  async stop(): Promise<void> {
    this.running = false;
  }
  async waitForSync(): Promise<void> {}
  hasSynced(): boolean {
    return this.running;
  }
  health() {
    return { healthy: true };
  }
}

describe('ManagerLifecycle', () => {
  it('starts the manager with the application and stops it on shutdown', async () => {
    const cache = new SyncedCache();
    const manager = new Manager({
      client: {} as KubeClient,
      cache: cache as unknown as InformerCache,
      logger: createLogger({ level: 'silent' }),
      registry: new Registry(),
      leaderElection: false,
    });
    const moduleRef = await Test.createTestingModule({
      providers: [{ provide: Manager, useValue: manager }, ManagerLifecycle],
    }).compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    expect(manager.isReady()).toBe(true);
    expect(manager.isLeader()).toBe(true);
    await app.close();
    expect(manager.isReady()).toBe(false);
    expect(cache.running).toBe(false);
  });
});
