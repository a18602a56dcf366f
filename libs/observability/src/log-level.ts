import type { LogLevel } from './logger';

/** The level names every ARO process accepts (LOG_LEVEL, the listener's config.json `log_level`). */
export const logLevelNames = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevelName = (typeof logLevelNames)[number];

/**
 * A log level as upstream's controller accepts it (`--log-level`, chart `flags.logLevel`): a name, or
 * a zap level number (-128..127): -1 is debug (and anything lower, logr's V(2) and beyond, since ARO
 * has nothing more verbose), 0 info, 1 warn, 2 error; 3 and above keep only zap's panic and fatal
 * records, of which ARO writes none, so they log nothing. Undefined when the value is neither.
 */
export function parseLogLevel(value: string): LogLevel | undefined {
  const text = value.trim().toLowerCase();
  if ((logLevelNames as readonly string[]).includes(text)) return text as LogLevelName;
  if (!/^[+-]?\d+$/.test(text)) return undefined;
  const zapLevel = Number(text);
  if (zapLevel < -128 || zapLevel > 127) return undefined;
  if (zapLevel <= -1) return 'debug';
  if (zapLevel === 0) return 'info';
  if (zapLevel === 1) return 'warn';
  if (zapLevel === 2) return 'error';
  return 'silent';
}
