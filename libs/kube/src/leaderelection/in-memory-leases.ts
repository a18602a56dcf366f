// InMemoryLeases moved to @aro/kube/testing. Re-exported here only so that specs importing it by this
// path keep compiling; the leaderelection barrel does not export it.
export { InMemoryLeases } from '../testing/in-memory-leases';
