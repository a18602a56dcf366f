export * from './lean';
export * from './observability.module';
