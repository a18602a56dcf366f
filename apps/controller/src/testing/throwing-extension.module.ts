/*
 * An extension that fails as it loads, as one with a missing dependency or a bad top-level statement
 * would: the controller must refuse to start, naming it (main.spec.ts).
 */
throw new Error('the vault address is not configured');
