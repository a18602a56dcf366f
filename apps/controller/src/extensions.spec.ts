import { resolve } from 'node:path';
import { ExtensionError, extensionBlamedFor, loadExtensions } from './extensions';
import { ProviderThrowsModule } from './testing/provider-throws.module';

const root = resolve(__dirname, '..', '..', '..');

describe('loadExtensions', () => {
  it('takes the named exports ending in Module of a file given by path', () => {
    const [ext] = loadExtensions(['./apps/controller/src/testing/provider-throws.module'], root);
    expect(ext.name).toBe('./apps/controller/src/testing/provider-throws.module');
    expect(ext.modules).toEqual([ProviderThrowsModule]);
  });

  it('refuses a file that exports no Nest module, naming it', () => {
    expect(() => loadExtensions(['./apps/controller/src/config'], root)).toThrow(
      new ExtensionError(
        './apps/controller/src/config',
        'exports no Nest module (export it as default, or under a name ending in "Module")',
      ),
    );
  });

  it('refuses a package that is not installed, naming it', () => {
    expect(() => loadExtensions(['@example/not-installed'], root)).toThrow(
      /extension @example\/not-installed: not found \(no package of that name/,
    );
  });

  it('blames the extension whose module a failure names, and no other', () => {
    const loaded = loadExtensions(['./apps/controller/src/testing/provider-throws.module'], root);
    const diError = new Error(
      "Nest can't resolve dependencies of the FailingProvider (?). Please make sure that the argument at index [0] is available in the ProviderThrowsModule context.",
    );
    expect(extensionBlamedFor(diError, loaded)?.name).toBe(loaded[0].name);
    expect(extensionBlamedFor(new Error('connect ECONNREFUSED 127.0.0.1:1'), loaded)).toBeUndefined();
  });
});
