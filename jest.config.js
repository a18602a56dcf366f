// Two projects: unit specs live beside their source (*.spec.ts) and need nothing running; integration
// suites (test/**/*.test.ts) share one real control plane per jest run, started in globalSetup.
//
// Nest 12, client-node and zod ship as ESM only. On Node 24.9+ Jest 30 require()s them natively,
// but only with the VM modules API switched on (`--experimental-vm-modules`): the npm scripts pass it.
// Without it Jest would fail each suite with "Must use import to load ES Module"; say how to run instead.
if (typeof require('node:vm').SourceTextModule !== 'function') {
  throw new Error(
    'Run jest through npm (`npm test`, or `npm run jest -- <args>`): on Node 24 it loads the ESM-only ' +
      'packages natively only with --experimental-vm-modules, which those scripts pass.',
  );
}

const aliases = {
  '^@aro/(api|kube|actions|secrets|controllers|observability)$': '<rootDir>/libs/$1/src',
  '^@aro/(api|kube|actions|secrets|controllers|observability)/(.*)$': '<rootDir>/libs/$1/src/$2',
};

const common = {
  moduleFileExtensions: ['js', 'mjs', 'cjs', 'json', 'ts'],
  transform: { '^.+\\.(t|j|mj|cj)s$': ['@swc/jest'] },
  transformIgnorePatterns: ['/node_modules/'],
  testEnvironment: 'node',
  moduleNameMapper: aliases,
};

module.exports = {
  // One control plane serves every suite; two workers keep the 2-core machine busy without starving
  // the apiserver it shares the cores with.
  maxWorkers: 2,
  projects: [
    {
      ...common,
      displayName: 'unit',
      roots: ['<rootDir>/apps/', '<rootDir>/libs/', '<rootDir>/tools/'],
      testRegex: '.*\\.spec\\.ts$',
      setupFilesAfterEnv: ['<rootDir>/test/harness/jest-unit-setup.ts'],
    },
    {
      ...common,
      displayName: 'integration',
      roots: ['<rootDir>/test/', '<rootDir>/examples/'],
      testRegex: '.*\\.test\\.ts$',
      globalSetup: '<rootDir>/test/harness/global-setup.ts',
      globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/harness/jest-setup.ts'],
    },
  ],
};
