import type { V1Secret } from '@kubernetes/client-node';
import { AutoscalingListener, ListenerConfig, integrityHash } from '@aro/api';
import { SecretKind } from '@aro/kube';
import { FakeKubeClient } from '@aro/kube/testing';
import { silentLogger } from '@aro/observability';
import type { SecretResolver } from '@aro/secrets';
import { listenerContext } from './listener-context';
import { SharedConfigSecret, sharedConfigKey } from './listener-config-store';
import type { CachedSharedConfig } from './shared-config-cache';

/*
 * Shared mode's config store and the watch of its Secret: what `current` answers from (the server, the
 * watched copy, or its own write the watch has not delivered yet), on a fake API server and clock.
 */

const NS = 'arc-system';
const SECRET = 'aro-shared-listener-configs';
const T0 = Date.UTC(2026, 0, 1);
const listener = {
  apiVersion: 'actions.github.com/v1alpha1',
  kind: 'AutoscalingListener',
  metadata: { namespace: NS, name: 'arc-runners-listener', uid: 'u1' },
  spec: {},
} as AutoscalingListener;
const config = (token: string) =>
  ({ configureUrl: `https://github.com/${token}` }) as unknown as ListenerConfig;
const hashOfConfig = (c: ListenerConfig) => integrityHash(JSON.stringify(c));

function setup() {
  const clock = { now: T0 };
  const kube = new FakeKubeClient(() => clock.now);
  let watched: CachedSharedConfig = { known: false };
  const ctx = listenerContext(
    { client: kube, cache: kube, resolver: {} as SecretResolver, logger: silentLogger, now: () => clock.now },
    {
      listenerMode: 'shared',
      sharedServiceAccountName: 'aro-shared-listener',
      sharedConfigSecretName: SECRET,
    },
  );
  const store = new SharedConfigSecret(ctx, { read: () => watched });
  const secretWith = (c: ListenerConfig | undefined, resourceVersion: string): V1Secret => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { namespace: NS, name: SECRET, resourceVersion },
    data: c ? { [sharedConfigKey(listener)]: Buffer.from(JSON.stringify(c)).toString('base64') } : {},
  });
  return {
    clock,
    kube,
    store,
    secretWith,
    watch: (state: CachedSharedConfig) => (watched = state),
    current: async () => (await store.current(listener)).hash,
  };
}

describe('The shared configs Secret store', () => {
  it('reads the Secret from the server until its watch has listed', async () => {
    const t = setup();
    t.kube.seed<V1Secret>(SecretKind, t.secretWith(config('on-server'), '1'));
    expect(await t.current()).toBe(hashOfConfig(config('on-server')));
  });

  it('reads the watched copy once the watch has listed, and sees a key removed there', async () => {
    const t = setup();
    t.kube.seed<V1Secret>(SecretKind, t.secretWith(config('on-server'), '1'));
    t.watch({ known: true, secret: t.secretWith(config('watched'), '2') });
    expect(await t.current()).toBe(hashOfConfig(config('watched')));
    t.watch({ known: true, secret: t.secretWith(undefined, '3') });
    expect(await t.current()).toBeUndefined();
    t.watch({ known: true, secret: undefined });
    expect(await t.current()).toBeUndefined();
  });

  it('takes its own write over a watched copy that has not caught up, until the watch delivers it or 30 s pass', async () => {
    const t = setup();
    t.kube.seed<V1Secret>(SecretKind, t.secretWith(undefined, '1'));
    t.watch({ known: true, secret: t.kube.peek<V1Secret>(SecretKind, NS, SECRET) });
    const written = await t.store.write(listener, config('new'), {}, silentLogger);
    expect(written).toBe(hashOfConfig(config('new')));
    // The watch still holds the copy from before the write: the write's answer stands in for it.
    expect(await t.current()).toBe(hashOfConfig(config('new')));
    // Past 30 s the watch is believed again (here it never delivered: someone's later change would show).
    t.clock.now += 31_000;
    expect(await t.current()).toBeUndefined();

    // The watch delivering the write ends the stand-in at once.
    await t.store.write(listener, config('newer'), {}, silentLogger);
    const stored = t.kube.peek<V1Secret>(SecretKind, NS, SECRET)!;
    t.watch({ known: true, secret: stored });
    expect(await t.current()).toBe(hashOfConfig(config('newer')));
    t.watch({ known: true, secret: t.secretWith(config('changed-by-someone'), 'later') });
    expect(await t.current()).toBe(hashOfConfig(config('changed-by-someone')));
  });
});
