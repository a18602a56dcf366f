import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import { createLogger } from './logger';
import { getOrCreateCounter } from './metrics';

function capture(format: 'json' | 'text', level: 'debug' | 'info' = 'info') {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  return { logger: createLogger({ format, level, destination: stream }), lines };
}

describe('createLogger', () => {
  it("writes flat JSON records with upstream's keys, the child bindings and the call fields", () => {
    const { logger, lines } = capture('json');
    logger.child({ namespace: 'arc', name: 'runner-1' }).info('Created the runner pod', { podUid: 'u1' });
    const record = JSON.parse(lines[0]) as Record<string, unknown>;
    expect(record).toEqual({
      severity: 'info',
      ts: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) as unknown,
      message: 'Created the runner pod',
      namespace: 'arc',
      name: 'runner-1',
      podUid: 'u1',
    });
  });

  it('names each level as zap does', () => {
    const { logger, lines } = capture('json', 'debug');
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    expect(lines.map((l) => (JSON.parse(l) as { severity: string }).severity)).toEqual([
      'debug',
      'info',
      'warn',
      'error',
    ]);
  });

  it('writes an error as upstream does: its text under error, its stack under stacktrace', () => {
    const { logger, lines } = capture('json');
    logger.error('Failed to delete the pod', new Error('boom'), { podUid: 'u1' });
    const record = JSON.parse(lines[0]) as { error: string; stacktrace: string; podUid: string };
    expect(record.error).toBe('boom');
    expect(record.stacktrace).toContain('Error: boom');
    expect(record.podUid).toBe('u1');
  });

  it('writes any field value without throwing: a circle as [Circular], a bigint as digits, an Error as its text', () => {
    const { logger, lines } = capture('json');
    const owner: Record<string, unknown> = { name: 'set-a' };
    owner.self = owner;
    const shared = { id: 1 };
    logger.info('Odd fields', { owner, pair: [shared, shared], big: 10n, cause: new Error('gone') });
    expect(JSON.parse(lines[0])).toMatchObject({
      owner: { name: 'set-a', self: '[Circular]' },
      pair: [{ id: 1 }, { id: 1 }],
      big: '10',
      cause: 'gone',
    });
  });

  it('drops records below the configured level', () => {
    const { logger, lines } = capture('json', 'info');
    logger.debug('noise');
    logger.warn('kept');
    expect(lines.map((l) => (JSON.parse(l) as { message: string }).message)).toEqual(['kept']);
  });

  it('renders the text format as one readable line with key=value pairs', () => {
    const { logger, lines } = capture('text');
    logger.child({ name: 'runner-1' }).warn('Backing off', { requeueAfterMs: 5000 });
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\S+ WARN Backing off name=runner-1 requeueAfterMs=5000$/);
  });
});

describe('one key once per line', () => {
  const keyCount = (line: string, key: string) => line.split(`"${key}":`).length - 1;

  it("lets a child's binding replace its parent's instead of repeating the key", () => {
    const { logger, lines } = capture('json');
    logger.child({ component: 'cache' }).child({ component: 'informer' }).info('Synced');
    expect(keyCount(lines[0], 'component')).toBe(1);
    expect(JSON.parse(lines[0])).toMatchObject({ component: 'informer' });
  });

  it('lets a call field replace a binding of the same name', () => {
    const { logger, lines } = capture('json');
    logger.child({ namespace: 'a', name: 'r' }).warn('Moved', { namespace: 'b' });
    expect(keyCount(lines[0], 'namespace')).toBe(1);
    expect(JSON.parse(lines[0])).toMatchObject({ namespace: 'b', name: 'r' });
  });

  it('keeps one error key when the fields carry one too', () => {
    const { logger, lines } = capture('json');
    logger.child({ error: 'bound' }).error('Failed', new Error('boom'), { error: 'field' });
    expect(keyCount(lines[0], 'error')).toBe(1);
    expect((JSON.parse(lines[0]) as { error: string }).error).toBe('boom');
  });

  it("renames a field that would repeat the record's own severity, ts or message", () => {
    const { logger, lines } = capture('json');
    logger.child({ severity: 'high' }).warn('Disk filling', { message: 'from a field', ts: 'then' });
    for (const key of ['severity', 'ts', 'message']) expect(keyCount(lines[0], key)).toBe(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      severity: 'warn',
      message: 'Disk filling',
      field_severity: 'high',
      field_message: 'from a field',
      field_ts: 'then',
    });
  });
});

describe('error messages', () => {
  it('states a cause once when the message already carries it', () => {
    const { logger, lines } = capture('json');
    const cause = new Error('"not a url": invalid config URL, not an absolute URL');
    const err = new Error(`failed to get actions client: ${cause.message}`, { cause });
    logger.error('Reconciler error', err);
    const message = (JSON.parse(lines[0]) as { error: string }).error;
    expect(message).toBe(
      'failed to get actions client: "not a url": invalid config URL, not an absolute URL',
    );
  });

  it('still appends a cause the message does not mention', () => {
    const { logger, lines } = capture('text');
    const err = new Error('failed to delete the pod', { cause: new Error('connection reset') });
    logger.error('Reconciler error', err);
    expect(lines[0]).toContain('error="failed to delete the pod: connection reset"');
  });
});

describe('getOrCreateCounter', () => {
  it('returns the already registered metric instead of throwing on a second registration', () => {
    const registry = new Registry();
    const first = getOrCreateCounter(registry, { name: 'aro_test_total', help: 'test' });
    const second = getOrCreateCounter(registry, { name: 'aro_test_total', help: 'test' });
    second.inc();
    expect(second).toBe(first);
  });
});
