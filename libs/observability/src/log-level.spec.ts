import { parseLogLevel } from './log-level';

describe('parseLogLevel', () => {
  it('accepts the names', () => {
    for (const name of ['debug', 'info', 'warn', 'error']) expect(parseLogLevel(name)).toBe(name);
    expect(parseLogLevel('INFO')).toBe('info');
  });

  it("reads a zap level number as upstream's --log-level does", () => {
    expect(parseLogLevel('-2')).toBe('debug');
    expect(parseLogLevel('-1')).toBe('debug');
    expect(parseLogLevel('0')).toBe('info');
    expect(parseLogLevel('1')).toBe('warn');
    expect(parseLogLevel('2')).toBe('error');
    // Only zap's dpanic, panic and fatal records are left at 3 and above; ARO writes none.
    expect(parseLogLevel('5')).toBe('silent');
    expect(parseLogLevel('-128')).toBe('debug');
  });

  it('refuses what upstream refuses: other words, and numbers outside int8', () => {
    expect(parseLogLevel('verbose')).toBeUndefined();
    expect(parseLogLevel('1.5')).toBeUndefined();
    expect(parseLogLevel('128')).toBeUndefined();
    expect(parseLogLevel('')).toBeUndefined();
  });
});
