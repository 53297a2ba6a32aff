/**
 * Structured JSON logs through pino, one object a line on stderr (written synchronously, so
 * nothing is lost at exit): `level` (its name), `ts` (ISO 8601), the logger's fields
 * (`component`, `processor`) and the call's, then `msg`. No field overwrites those three; a
 * call's field overwrites the logger's of the same name; errors are written as their name,
 * message and code, bigints as text. Secrets are taken out before they reach a logger
 * (`lib/redact.ts`).
 */
import pino, { type DestinationStream, type Logger as Pino } from "pino";

export type Level = "debug" | "info" | "warn" | "error";

const LEVELS: readonly Level[] = ["debug", "info", "warn", "error"];

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function threshold(): Level {
  const level = process.env.OZ0_LOG_LEVEL ?? "info";
  return (LEVELS as readonly string[]).includes(level) ? (level as Level) : "info";
}

/** JSON.stringify's replacer: what JSON cannot hold as it is (errors, bigints) as text a person can read. */
function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code;
    return { name: value.name, message: value.message, ...(code === undefined ? {} : { code }) };
  }
  return value;
}

/** The fields as JSON will write them, without `ts`, `level` and `msg`; a value JSON cannot write (a cycle) is named rather than crashing the caller. */
function fieldsOf(obj: Record<string, unknown>): Record<string, unknown> {
  try {
    const { ts: _ts, level: _level, msg: _msg, ...rest } = JSON.parse(JSON.stringify(obj, jsonSafe) ?? "{}") as Record<string, unknown>;
    return rest;
  } catch (err) {
    return { log_error: `fields not written: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function pinoLogger(level: Level, stream: DestinationStream, now: () => Date = () => new Date()): Pino<never, false> {
  return pino(
    {
      level,
      base: null,
      messageKey: "msg",
      timestamp: () => `,"ts":"${now().toISOString()}"`,
      formatters: { level: (label) => ({ level: label }), log: fieldsOf },
    },
    stream,
  );
}

let stderr: DestinationStream | undefined;

/** stderr, written synchronously: a line logged just before exit is not lost. */
function stderrStream(): DestinationStream {
  stderr ??= pino.destination({ dest: 2, sync: true });
  return stderr;
}

/** One log line, as a logger writes it. */
export function formatLine(level: Level, msg: string, fields: Record<string, unknown>, now: Date = new Date()): string {
  let line = "";
  pinoLogger("debug", { write: (l: string) => void (line += l) }, () => now)[level](fields, msg);
  return line;
}

/** A logger of `base` fields; lines go to `write`, else to stderr. */
export function createLogger(base: Record<string, unknown> = {}, write?: (line: string) => void): Logger {
  return wrap(pinoLogger(threshold(), write ? { write: (l: string) => write(l) } : stderrStream()), base);
}

/** The logger's fields are merged with the call's on each call, as one object: a line never holds a name twice. */
function wrap(p: Pino<never, false>, base: Record<string, unknown>): Logger {
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (p.isLevelEnabled(level)) p[level](fields ? { ...base, ...fields } : base, msg);
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => wrap(p, { ...base, ...fields }),
  };
}

/** kafkajs error texts that are transient right after start or a rebalance; logged at debug. */
const TRANSIENT_KAFKA = /not the correct coordinator|coordinator is not available|CONCURRENT_TRANSACTIONS|COORDINATOR_LOAD_IN_PROGRESS|concurrent transactions|another concurrent operation|not the leader for that topic-partition|does not host this topic-partition|loading the group|rebalanc/i;

/**
 * Routes kafkajs's own logs into a structured logger, with the transient coordinator errors
 * kafkajs retries by itself moved down to debug, so an error line means something.
 */
export function kafkaLogCreator(log: Logger) {
  const kafkaLog = log.child({ component: "kafkajs" });
  return () =>
    ({ level, log: entry }: { namespace: string; level: number; label: string; log: { message: string; error?: string } & Record<string, unknown> }) => {
      const { message, timestamp: _ts, logger: _logger, ...fields } = entry;
      const text = `${message} ${entry.error ?? ""}`;
      if (level <= 1 && !TRANSIENT_KAFKA.test(text)) kafkaLog.error(message, fields);
      else if (level <= 2 && !TRANSIENT_KAFKA.test(text)) kafkaLog.warn(message, fields);
      else kafkaLog.debug(message, fields);
    };
}
