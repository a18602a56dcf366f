// Two projects: unit specs live beside their source (*.spec.ts) and need nothing running; integration
// suites (test/**/*.test.ts) share one real control plane per jest run, started in globalSetup.
//
// Nest 12, client-node and zod ship as ESM only, and jest 30 on Node 20 cannot require(esm), so @swc/jest
// transforms those packages to CommonJS; every other node_module is left alone.
const esmOnly = [
  '@nestjs',
  '@kubernetes',
  '@willsoto',
  'jose',
  'zod',
  'file-type',
  'openid-client',
  'oauth4webapi',
  'strtok3',
  'token-types',
  '@tokenizer',
  'uint8array-extras',
  'jsonpath-plus',
  '@jsep-plugin',
  'jsep',
  'undici',
  'load-esm',
];

const aliases = {
  '^@aro/(api|kube|actions|secrets|controllers|observability)$': '<rootDir>/libs/$1/src',
  '^@aro/(api|kube|actions|secrets|controllers|observability)/(.*)$': '<rootDir>/libs/$1/src/$2',
};

const common = {
  moduleFileExtensions: ['js', 'mjs', 'cjs', 'json', 'ts'],
  transform: { '^.+\\.(t|j|mj|cj)s$': ['@swc/jest'] },
  transformIgnorePatterns: [`/node_modules/(?!(${esmOnly.join('|')})/)`],
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
      roots: ['<rootDir>/apps/', '<rootDir>/libs/'],
      testRegex: '.*\\.spec\\.ts$',
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
