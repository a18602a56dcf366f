import { scaled } from './time-scale';

// Integration suites talk to a real apiserver on a shared 2-core machine; jest reads `testTimeout` only
// from the root configuration, so the integration project sets its own here, at the run's time scale.
jest.setTimeout(scaled(120_000));
