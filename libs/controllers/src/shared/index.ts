export * from './conditions';
export * from './controller-parts';
export * from './describe-error';
export * from './scale-set-labels';
export * from './controller-module';
