import pino from 'pino';

export type LogFields = Record<string, unknown>;
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export type LogFormat = 'json' | 'text';

/**
 * The logger every part of ARO writes through: flat key/value records, in the spirit of logr, so
 * that `kubectl logs | jq 'select(.name=="runner-x")'` finds everything said about one object.
 *
 * A reconciler gets a child bound to the object it works on, so no call site has to repeat the
 * namespace and name, and no record about an object can forget them.
 */
export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, err?: unknown, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** Where records go; stdout by default. Tests pass a stream to read what was logged. */
  destination?: NodeJS.WritableStream;
}

class PinoLogger implements Logger {
  constructor(private readonly base: pino.Logger) {}

  debug(msg: string, fields?: LogFields): void {
    this.base.debug(fields ?? {}, msg);
  }

  info(msg: string, fields?: LogFields): void {
    this.base.info(fields ?? {}, msg);
  }

  warn(msg: string, fields?: LogFields): void {
    this.base.warn(fields ?? {}, msg);
  }

  error(msg: string, err?: unknown, fields?: LogFields): void {
    // pino serialises an Error under `err` with its stack; a non-Error thrown value is kept as is.
    this.base.error(err === undefined ? (fields ?? {}) : { ...fields, err }, msg);
  }

  child(fields: LogFields): Logger {
    return new PinoLogger(this.base.child(fields));
  }
}

/**
 * The text format is for a person at a terminal (the sandbox, `npm start`); it is rendered here
 * rather than through pino-pretty so that no transport thread or extra dependency is needed.
 */
function textStream(out: NodeJS.WritableStream): NodeJS.WritableStream {
  const levels: Record<number, string> = {
    10: 'TRACE',
    20: 'DEBUG',
    30: 'INFO',
    40: 'WARN',
    50: 'ERROR',
    60: 'FATAL',
  };
  return {
    write(chunk: string | Uint8Array): boolean {
      const line = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
      try {
        const {
          level,
          time,
          msg,
          pid: _pid,
          hostname: _host,
          err,
          ...rest
        } = JSON.parse(line) as Record<string, unknown>;
        const kv = Object.entries(rest)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ');
        const errText =
          err && typeof err === 'object' && 'message' in err
            ? ` err=${JSON.stringify((err as Error).message)}`
            : '';
        const when = typeof time === 'number' ? new Date(time).toISOString() : String(time);
        return out.write(
          `${when} ${levels[level as number] ?? level} ${msg}${kv ? ' ' + kv : ''}${errText}\n`,
        );
      } catch {
        return out.write(line);
      }
    },
  } as NodeJS.WritableStream;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const out = opts.destination ?? process.stdout;
  const text = opts.format === 'text';
  return new PinoLogger(
    pino(
      {
        level: opts.level ?? 'info',
        base: undefined,
        // The text renderer reads pino's numeric levels and epoch times back; JSON gets names and ISO times.
        timestamp: text ? pino.stdTimeFunctions.epochTime : pino.stdTimeFunctions.isoTime,
        formatters: text ? {} : { level: (label) => ({ level: label }) },
      },
      text ? textStream(out) : out,
    ),
  );
}

/** For tests and tools that must stay quiet. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
