export * from './ephemeral-runner';
export * from './events/event-recorder';
export * from './shared';
export * from './registrations';
export * from './ephemeral-runner-set';
export * from './autoscaling-runner-set';
export * from './autoscaling-listener';
export * from './eviction-webhook';
