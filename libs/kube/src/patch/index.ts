export { createMergePatch, jsonEqual } from './merge-patch';
export { LazyCopy, type MergePatchOptions } from './lazy-copy';
