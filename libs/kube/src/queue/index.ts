export { type Clock, type TimerHandle, sleep, systemClock } from './clock';
export * from './rate-limiter';
export * from './rate-limiting-queue';
