export * from './lease-client';
export * from './leader-elector';
