export * from './finalizers';
export * from './owner-references';
export * from './not-found';
export * from './create-or-replace';
export * from './expectations';
export * from './own-writes';
export * from './object-memory';
export * from './pass';
