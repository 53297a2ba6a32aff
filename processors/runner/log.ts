/** Structured JSON logs, one object a line on stderr. */
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

export function createLogger(base: Record<string, unknown> = {}, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = threshold();
  const emit = (level: Level, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[level] < min) return;
    write(`${JSON.stringify({ ts: new Date().toISOString(), level, msg, ...base, ...fields })}\n`);
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
const TRANSIENT_KAFKA = /not the correct coordinator|coordinator is not available|CONCURRENT_TRANSACTIONS|COORDINATOR_LOAD_IN_PROGRESS|concurrent transactions|another concurrent operation|not the leader for that topic-partition|loading the group|rebalanc/i;

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
