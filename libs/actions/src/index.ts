export * from './lean';
export { ACTIONS_MODULE_OPTIONS, ActionsModule } from './actions.module';
export type { ActionsModuleOptions } from './actions.module';
