import { parseFieldSelector, parseLabelSelector } from './selectors';

describe('parseLabelSelector', () => {
  const labels = { app: 'runner', tier: 'ci', 'actions.github.com/scale-set-name': 'set-a' };

  it('matches everything when empty or absent', () => {
    expect(parseLabelSelector('')(labels)).toBe(true);
    expect(parseLabelSelector(undefined)(undefined)).toBe(true);
  });

  it('matches equality with = and ==', () => {
    expect(parseLabelSelector('app=runner')(labels)).toBe(true);
    expect(parseLabelSelector('app==runner')(labels)).toBe(true);
    expect(parseLabelSelector('app=other')(labels)).toBe(false);
  });

  it('matches != also on objects without the label, as the server does', () => {
    expect(parseLabelSelector('app!=other')(labels)).toBe(true);
    expect(parseLabelSelector('app!=runner')(labels)).toBe(false);
    expect(parseLabelSelector('missing!=x')(labels)).toBe(true);
    expect(parseLabelSelector('missing!=x')(undefined)).toBe(true);
  });

  it('matches set membership with in and notin', () => {
    expect(parseLabelSelector('tier in (ci, prod)')(labels)).toBe(true);
    expect(parseLabelSelector('tier in (prod)')(labels)).toBe(false);
    expect(parseLabelSelector('tier notin (prod,dev)')(labels)).toBe(true);
    expect(parseLabelSelector('tier notin (ci)')(labels)).toBe(false);
    expect(parseLabelSelector('missing notin (ci)')(labels)).toBe(true);
    expect(parseLabelSelector('missing in (ci)')(labels)).toBe(false);
  });

  it('matches existence and absence', () => {
    expect(parseLabelSelector('app')(labels)).toBe(true);
    expect(parseLabelSelector('!app')(labels)).toBe(false);
    expect(parseLabelSelector('!missing')(labels)).toBe(true);
    expect(parseLabelSelector('missing')(labels)).toBe(false);
  });

  it('requires every requirement, with commas inside sets not splitting', () => {
    expect(parseLabelSelector('app=runner,tier in (a,ci),!missing')(labels)).toBe(true);
    expect(parseLabelSelector('app=runner,tier in (a,b)')(labels)).toBe(false);
  });

  it('handles prefixed keys and empty values', () => {
    expect(parseLabelSelector('actions.github.com/scale-set-name=set-a')(labels)).toBe(true);
    expect(parseLabelSelector('empty=')({ empty: '' })).toBe(true);
    expect(parseLabelSelector('empty=')({ empty: 'x' })).toBe(false);
  });

  it('refuses what it cannot parse, naming the selector', () => {
    expect(() => parseLabelSelector('app=(x')).toThrow(/app=\(x/);
    expect(() => parseLabelSelector('a in b')).toThrow(/cannot parse/);
  });
});

describe('parseFieldSelector', () => {
  const obj = { metadata: { name: 'p1', namespace: 'ns1' } };

  it('matches metadata.name and metadata.namespace', () => {
    expect(parseFieldSelector('metadata.name=p1')(obj)).toBe(true);
    expect(parseFieldSelector('metadata.name==p2')(obj)).toBe(false);
    expect(parseFieldSelector('metadata.namespace!=ns2,metadata.name=p1')(obj)).toBe(true);
    expect(parseFieldSelector('')(obj)).toBe(true);
  });

  it('refuses fields the cache cannot answer', () => {
    expect(() => parseFieldSelector('status.phase=Running')).toThrow(/API reader/);
  });
});
