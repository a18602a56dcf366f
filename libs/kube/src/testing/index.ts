/*
 * Test doubles for specs of anything built on @aro/kube: never imported by production code (the lib
 * build excludes this folder). Import from '@aro/kube/testing'.
 */
export { FakeClock, flushMicrotasks } from './fake-clock';
export { InMemoryLeases } from './in-memory-leases';
export { FakeKubeClient, apiError, type FakeKubeCall, type FakeKubeFault } from './fake-kube-client';
