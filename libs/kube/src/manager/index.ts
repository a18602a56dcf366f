export * from './runnable';
export * from './manager';
export * from './nest';
export * from './leader-schedule';
