/**
 * Structured JSON logs, one object a line on stderr: `ts` (ISO 8601), `level`, `msg` first, then
 * the logger's fields (`component`, `processor`) and the call's. Those three are never
 * overwritten by a field; errors are written as their name and message, bigints as text.
 */
export type Level = "debug" | "info" | "warn" | "error";

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function threshold(): number {
  const level = (process.env.OZ0_LOG_LEVEL ?? "info") as Level;
  return ORDER[level] ?? ORDER.info;
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

/** One log line; a value JSON cannot write (a cycle) is named rather than crashing the caller. */
export function formatLine(level: Level, msg: string, fields: Record<string, unknown>, now: Date = new Date()): string {
  const head = { ts: now.toISOString(), level, msg };
  try {
    return `${JSON.stringify({ ...head, ...fields, ...head }, jsonSafe)}\n`;
  } catch (err) {
    return `${JSON.stringify({ ...head, log_error: `fields not written: ${err instanceof Error ? err.message : String(err)}` })}\n`;
  }
}

export function createLogger(base: Record<string, unknown> = {}, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = threshold();
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[level] < min) return;
    write(formatLine(level, msg, { ...base, ...fields }));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...base, ...fields }, write),
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
