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

/**
 * Bindings are kept here and merged with each call's fields, not left to pino's child loggers: pino
 * writes a child's bindings after its parent's without replacing them, so `component` bound twice
 * (cache, then informer) came out as two `"component"` keys on one JSON line, which most log
 * pipelines either reject or resolve to the first. Here the innermost value wins: a child's binding
 * replaces its parent's, and a call's field replaces both; the error passed to `error()` replaces
 * any `error` or `stacktrace` field.
 */
class PinoLogger implements Logger {
  constructor(
    private readonly base: pino.Logger,
    /** The record's own keys (level, time, message): a field of that name is renamed, not repeated. */
    private readonly reserved: ReadonlySet<string>,
    private readonly bindings: LogFields = {},
  ) {}

  debug(msg: string, fields?: LogFields): void {
    if (this.base.isLevelEnabled('debug')) this.base.debug(this.record(fields), msg);
  }

  info(msg: string, fields?: LogFields): void {
    if (this.base.isLevelEnabled('info')) this.base.info(this.record(fields), msg);
  }

  warn(msg: string, fields?: LogFields): void {
    if (this.base.isLevelEnabled('warn')) this.base.warn(this.record(fields), msg);
  }

  error(msg: string, err?: unknown, fields?: LogFields): void {
    if (!this.base.isLevelEnabled('error')) return;
    this.base.error(
      err === undefined ? this.record(fields) : { ...this.record(fields), ...errorFields(err) },
      msg,
    );
  }

  child(fields: LogFields): Logger {
    return new PinoLogger(this.base, this.reserved, { ...this.bindings, ...this.unreserved(fields) });
  }

  private record(fields: LogFields | undefined): LogFields {
    return fields === undefined ? this.bindings : { ...this.bindings, ...this.unreserved(fields) };
  }

  /** pino writes its own level, time and message keys whatever the fields hold: `field_<key>` instead. */
  private unreserved(fields: LogFields): LogFields {
    if (!Object.keys(fields).some((key) => this.reserved.has(key))) return fields;
    return Object.fromEntries(
      Object.entries(fields).map(([key, value]) => [this.reserved.has(key) ? `field_${key}` : key, value]),
    );
  }
}

/**
 * An error as upstream's zap logger writes it (logr's `Error(err, msg)` through zapr): its text under
 * `error`, and the stack under `stacktrace`. The text states each cause once.
 */
function errorFields(err: unknown): LogFields {
  if (err instanceof Error) return { error: messageOnce(err), stacktrace: err.stack ?? '' };
  return { error: typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err)) };
}

/**
 * The message of an error and of its causes, each stated once. pino joins every cause's message to
 * the error's own, but ARO's errors already carry their cause's message ("failed to get actions
 * client: <cause>"), so the line said the cause twice. A cause whose message the text so far already
 * contains adds nothing.
 */
export function messageOnce(err: Error): string {
  let message = err.message;
  const seen = new Set<unknown>([err]);
  let cause: unknown = err.cause;
  while (cause instanceof Error && !seen.has(cause)) {
    seen.add(cause);
    if (cause.message !== '' && !message.includes(cause.message)) message = `${message}: ${cause.message}`;
    cause = cause.cause;
  }
  return message;
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
          error,
          stacktrace: _stack,
          ...rest
        } = JSON.parse(line) as Record<string, unknown>;
        const kv = Object.entries(rest)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ');
        const errText = error === undefined ? '' : ` error=${JSON.stringify(error)}`;
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

/**
 * Now as upstream's JSON logs stamp it: zapcore's RFC3339TimeEncoder, in whole seconds, UTC (the
 * container's zone). Log pipelines parsing upstream's `ts` read ARO's the same way.
 */
function rfc3339Seconds(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * JSON records carry upstream's keys (its zap encoder config: `severity`, `ts`, `message`, errors under
 * `error` with a `stacktrace`), so queries and alerts written against upstream's controller logs, such
 * as `severity == "error"`, find ARO's records. The text format is for a person and keeps its own.
 */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const out = opts.destination ?? process.stdout;
  const text = opts.format === 'text';
  const reserved = new Set(text ? ['level', 'time', 'msg'] : ['severity', 'ts', 'message']);
  return new PinoLogger(
    pino(
      text
        ? // The text renderer reads pino's numeric levels, epoch times and msg back.
          { level: opts.level ?? 'info', base: undefined, timestamp: pino.stdTimeFunctions.epochTime }
        : {
            level: opts.level ?? 'info',
            base: undefined,
            messageKey: 'message',
            timestamp: () => `,"ts":"${rfc3339Seconds()}"`,
            formatters: { level: (label) => ({ severity: label }) },
          },
      text ? textStream(out) : out,
    ),
    reserved,
  );
}

/** For tests and tools that must stay quiet. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
