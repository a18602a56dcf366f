import { resolve } from 'node:path';
import type { Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import { MultiClient } from '@aro/actions';
import {
  AutoscalingListenerController,
  AutoscalingRunnerSetController,
  EphemeralRunnerController,
  EphemeralRunnerSetController,
  UnregistrationQueue,
} from '@aro/controllers';
import { InformerCache, KubeClient } from '@aro/kube';
import { silentLogger } from '@aro/observability';
import { SecretResolver } from '@aro/secrets';
import { loadControllerConfig } from './config';
import { ControllerAppModule } from './controller-app.module';

const root = resolve(__dirname, '..', '..', '..');

/**
 * The design's five modules, read from the app's own module graph (compiled, not started: no
 * lifecycle hook runs, nothing reaches a cluster): the watcher apart from the client, the reconcilers,
 * the Actions client, the secret resolver and the unregistration worker, each its own module.
 */
describe('the controller app module graph', () => {
  let app: TestingModule;

  beforeAll(async () => {
    const config = loadControllerConfig({
      KUBECONFIG: resolve(root, 'apps/controller/src/testing/unreachable.kubeconfig'),
    });
    app = await Test.createTestingModule({
      imports: [ControllerAppModule.forRoot({ config, logger: silentLogger, managerStart: 'manual' })],
    }).compile();
  });

  afterAll(() => app?.close());

  /** The module that declares `token` as its own provider (not one it merely sees). */
  function ownerOf(token: Type<unknown>): string {
    const owners = [...app.get(ModulesContainer).values()].filter((m) => m.providers.has(token));
    expect(owners.map((m) => m.metatype.name)).toHaveLength(1);
    return owners[0].metatype.name;
  }

  /** The module that imports every one of `modules` (the reconcilers' home). */
  function importerOf(modules: string[]): string[] {
    return [...app.get(ModulesContainer).values()]
      .filter((m) => modules.every((name) => [...m.imports].some((i) => i.metatype.name === name)))
      .map((m) => m.metatype.name);
  }

  it('holds the watcher, the client, the reconcilers, the Actions client, the secret resolver and the unregistration worker in modules of their own', () => {
    const controllers = [
      EphemeralRunnerController,
      EphemeralRunnerSetController,
      AutoscalingRunnerSetController,
      AutoscalingListenerController,
    ].map(ownerOf);
    const reconcilers = importerOf(controllers).filter((name) => name !== 'ControllerAppModule');
    expect(reconcilers).toEqual(['ReconcilersModule']);

    const five = {
      watcher: ownerOf(InformerCache),
      client: ownerOf(KubeClient),
      reconcilers: reconcilers[0],
      actions: ownerOf(MultiClient),
      secrets: ownerOf(SecretResolver),
      unregistration: ownerOf(UnregistrationQueue),
    };
    expect(five).toEqual({
      watcher: 'WatchModule',
      client: 'KubeModule',
      reconcilers: 'ReconcilersModule',
      actions: 'ActionsModule',
      secrets: 'SecretsModule',
      unregistration: 'UnregistrationModule',
    });
    // Folded into another, one of them would share its module.
    expect(new Set(Object.values(five)).size).toBe(6);
  });
});
