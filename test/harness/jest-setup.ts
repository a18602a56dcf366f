// Integration suites talk to a real apiserver on a shared 2-core machine; jest reads `testTimeout` only
// from the root configuration, so the integration project sets its own here.
jest.setTimeout(120_000);
