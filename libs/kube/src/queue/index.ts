export * from './clock';
export * from './rate-limiter';
export * from './rate-limiting-queue';
