export * from './lease-client';
export * from './leader-elector';
export * from './in-memory-leases';
