export * from './ephemeral-runner';
export * from './events/event-recorder';
