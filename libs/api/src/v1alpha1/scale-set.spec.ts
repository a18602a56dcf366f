import {
  autoscalingListenerName,
  fnv32aHex,
  integrityHash,
  runnerProxySecretName,
  trimLabelValue,
} from './scale-set';

describe('scale-set names and hashes', () => {
  it('hashes with 32-bit FNV-1a as Go does (known vectors)', () => {
    expect(fnv32aHex('')).toBe('811c9dc5');
    expect(fnv32aHex('a')).toBe('e40c292c');
    expect(fnv32aHex('foobar')).toBe('bf9cf968');
  });

  it('names the runner proxy secret and the listener as upstream', () => {
    expect(runnerProxySecretName('set', 'ns')).toBe(`set-${fnv32aHex('ns')}-runner-proxy`);
    expect(autoscalingListenerName('set', 'ns', '', 'https://github.com/o')).toBe(
      `set-${fnv32aHex('ns@@https://github.com/o')}-listener`,
    );
  });

  it('gives equal values the same integrity hash whatever the key order, and different values different ones', () => {
    expect(integrityHash({ a: 1, b: { c: 2, d: 3 } })).toBe(integrityHash({ b: { d: 3, c: 2 }, a: 1 }));
    expect(integrityHash({ a: 1 })).not.toBe(integrityHash({ a: 2 }));
    expect(integrityHash({ a: 1, b: undefined })).toBe(integrityHash({ a: 1 }));
  });

  it('trims label values as upstream: over 63 characters to 58 plus -trim, else strips -_. at the ends', () => {
    expect(trimLabelValue('a'.repeat(64))).toBe(`${'a'.repeat(58)}-trim`);
    expect(trimLabelValue('_-org.')).toBe('org');
    expect(trimLabelValue('my-org')).toBe('my-org');
  });
});
