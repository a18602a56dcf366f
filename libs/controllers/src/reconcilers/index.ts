export { ReconcilersModule, type ReconcilersModuleOptions } from './reconcilers.module';
