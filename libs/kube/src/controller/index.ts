export * from './types';
export * from './predicates';
export * from './handlers';
export * from './controller';
export * from './builder';
export * from './terminal-error';
