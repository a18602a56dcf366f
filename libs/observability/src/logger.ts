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

/** Where a logger's records go: the level filter, the record's own keys, and the line format. */
interface Sink {
  enabled(level: WrittenLevel): boolean;
  /** The record's own keys (level, time, message): a field of that name is renamed, not repeated. */
  readonly reserved: ReadonlySet<string>;
  write(level: WrittenLevel, msg: string, fields: LogFields): void;
}

type WrittenLevel = Exclude<LogLevel, 'silent'>;
const SEVERITY: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50, silent: Infinity };

/**
 * Bindings are kept here and merged with each call's fields: the innermost value wins, so a key is
 * written once per line (a child's binding replaces its parent's, a call's field replaces both; the
 * error passed to `error()` replaces any `error` or `stacktrace` field). Duplicate keys on one JSON
 * line are what most log pipelines reject or resolve to the first.
 */
class LineLogger implements Logger {
  constructor(
    private readonly sink: Sink,
    private readonly bindings: LogFields = {},
  ) {}

  debug(msg: string, fields?: LogFields): void {
    if (this.sink.enabled('debug')) this.sink.write('debug', msg, this.record(fields));
  }

  info(msg: string, fields?: LogFields): void {
    if (this.sink.enabled('info')) this.sink.write('info', msg, this.record(fields));
  }

  warn(msg: string, fields?: LogFields): void {
    if (this.sink.enabled('warn')) this.sink.write('warn', msg, this.record(fields));
  }

  error(msg: string, err?: unknown, fields?: LogFields): void {
    if (!this.sink.enabled('error')) return;
    const record = this.record(fields);
    this.sink.write('error', msg, err === undefined ? record : { ...record, ...errorFields(err) });
  }

  child(fields: LogFields): Logger {
    return new LineLogger(this.sink, { ...this.bindings, ...this.unreserved(fields) });
  }

  private record(fields: LogFields | undefined): LogFields {
    return fields === undefined ? this.bindings : { ...this.bindings, ...this.unreserved(fields) };
  }

  /** The record's own keys are written whatever the fields hold: `field_<key>` instead. */
  private unreserved(fields: LogFields): LogFields {
    const { reserved } = this.sink;
    if (!Object.keys(fields).some((key) => reserved.has(key))) return fields;
    return Object.fromEntries(
      Object.entries(fields).map(([key, value]) => [reserved.has(key) ? `field_${key}` : key, value]),
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
 * The message of an error and of its causes, each stated once. ARO's errors already carry their
 * cause's message ("failed to get actions client: <cause>"), so joining every cause's message to the
 * error's own would say the cause twice. A cause whose message the text so far already contains adds
 * nothing.
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
 * A field's value as JSON: a value met again inside itself is written `"[Circular]"` rather than
 * throwing, a bigint as its digits, an Error as its message (JSON.stringify would write `{}`).
 */
function safeJson(value: unknown): string {
  const ancestors: object[] = [];
  const json = JSON.stringify(value, function (this: unknown, _key: string, v: unknown): unknown {
    if (typeof v === 'bigint') return v.toString();
    if (v instanceof Error) return messageOnce(v);
    if (typeof v !== 'object' || v === null) return v;
    // `this` is the object holding v: the ancestors above it are popped, so a value seen twice side by
    // side is written twice, and only a value inside itself is a circle.
    while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop();
    if (ancestors.includes(v)) return '[Circular]';
    ancestors.push(v);
    return v;
  }) as string | undefined;
  return json ?? 'null';
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
 * as `severity == "error"`, find ARO's records.
 */
function jsonSink(out: NodeJS.WritableStream, threshold: number): Sink {
  return {
    reserved: new Set(['severity', 'ts', 'message']),
    enabled: (level) => SEVERITY[level] >= threshold,
    write(level, msg, fields) {
      let line = `{"severity":"${level}","ts":"${rfc3339Seconds()}"`;
      for (const [key, value] of Object.entries(fields)) {
        if (value !== undefined) line += `,${JSON.stringify(key)}:${safeJson(value)}`;
      }
      out.write(`${line},"message":${JSON.stringify(msg)}}\n`);
    },
  };
}

/** The text format is for a person at a terminal (the sandbox, `npm start`): one readable line. */
function textSink(out: NodeJS.WritableStream, threshold: number): Sink {
  return {
    reserved: new Set(['level', 'time', 'msg']),
    enabled: (level) => SEVERITY[level] >= threshold,
    write(level, msg, fields) {
      const { error, stacktrace: _stack, ...rest } = fields;
      const kv = Object.entries(rest)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => ` ${k}=${typeof v === 'string' ? v : safeJson(v)}`)
        .join('');
      const errText = error === undefined ? '' : ` error=${safeJson(error)}`;
      out.write(`${new Date().toISOString()} ${level.toUpperCase()} ${msg}${kv}${errText}\n`);
    },
  };
}

/**
 * Records are written by hand, not through a logging library: what ARO's logger does (bindings with
 * one key once per line, upstream's keys, errors stated once, a text format) was already its own, and
 * what pino added, a level check and a JSON line, cost every process pino and its 30 modules, ~4 MiB
 * of RSS: a tenth of a listener pod's budget (docs/performance.md, "The listener"). Writes go to the
 * stream as they are made (stdout in the apps), one `write` per record, as pino's did.
 */
export function createLogger(opts: LoggerOptions = {}): Logger {
  const out = opts.destination ?? process.stdout;
  const threshold = SEVERITY[opts.level ?? 'info'];
  return new LineLogger(opts.format === 'text' ? textSink(out, threshold) : jsonSink(out, threshold));
}

/** For tests and tools that must stay quiet. */
export const silentLogger: Logger = createLogger({ level: 'silent' });
