/**
 * The one place a Redis connection is built (pipeline, commands, drills, benchmarks, tests),
 * so Redis AUTH and TLS work the same everywhere:
 *
 * - `OZ0_REDIS_URL`: `redis://[[user]:password@]host:port[/db]`, or `rediss://` for TLS;
 * - `OZ0_REDIS_USERNAME` and `OZ0_REDIS_PASSWORD`: the same credentials kept out of the URL
 *   (they win over the URL's), so the URL itself can be shown in logs and errors.
 *
 * The URL is never logged with its password: `redisWhere` gives it redacted.
 */
import { Redis, type RedisOptions } from "ioredis";
import { redactUrl } from "../../processors/runner/redact.ts";

/** What a connection needs of the endpoints (`Endpoints` has these fields). */
export interface RedisEndpoint {
  readonly redisUrl: string;
  /** ACL user (Redis 6+). @default the URL's, else none (the `default` user) */
  readonly redisUsername?: string;
  /** Redis AUTH password. @default the URL's, else none */
  readonly redisPassword?: string;
}

/** The ioredis options of an endpoint: credentials from the fields over the URL's, TLS for `rediss://`. */
export function redisOptions(endpoint: RedisEndpoint, options: RedisOptions = {}): RedisOptions {
  let url: URL;
  try {
    url = new URL(endpoint.redisUrl);
  } catch {
    throw new Error(`OZ0_REDIS_URL ${JSON.stringify(redactUrl(endpoint.redisUrl))} is not a URL: use redis://host:port or rediss://host:port`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new Error(`OZ0_REDIS_URL ${redactUrl(endpoint.redisUrl)} must start with redis:// or rediss:// (TLS)`);
  }
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d+$/.test(db)) throw new Error(`OZ0_REDIS_URL ${redactUrl(endpoint.redisUrl)} names database ${JSON.stringify(db)}: a database is a number`);
  const username = endpoint.redisUsername || decodeURIComponent(url.username) || undefined;
  const password = endpoint.redisPassword || decodeURIComponent(url.password) || undefined;
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : 6379,
    ...(db !== "" ? { db: Number(db) } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(url.protocol === "rediss:" ? { tls: { servername: url.hostname } } : {}),
    ...options,
  };
}

/** A Redis connection to the endpoint, with its AUTH and TLS; `options` add to or override the defaults. */
export function redisClient(endpoint: RedisEndpoint, options: RedisOptions = {}): Redis {
  const client = new Redis(redisOptions(endpoint, options));
  // A lost connection shows in the commands that fail (the runner logs and retries them) and
  // ioredis reconnects by itself; unheard, each reconnect attempt would print outside the
  // structured log.
  client.on("error", () => {});
  return client;
}

/** Where the connection goes, fit for a log line or an error: the URL without its password. */
export function redisWhere(endpoint: RedisEndpoint): string {
  return redactUrl(endpoint.redisUrl);
}
