export * from './runnable';
export * from './manager';
export * from './nest';
