/**
 * The one place a Redis connection is built (pipeline, commands, drills, benchmarks, tests),
 * so Redis AUTH, TLS and Redis Cluster work the same everywhere:
 *
 * - `OZ0_REDIS_URL`: `redis://[[user]:password@]host:port[/db]`, or `rediss://` for TLS; for
 *   Redis Cluster, several seed nodes separated by commas (`redis://h1:7000,redis://h2:7000`),
 *   or one with `OZ0_REDIS_CLUSTER=1`;
 * - `OZ0_REDIS_CLUSTER`: `1` (or `true`) for a cluster, `0` (or `false`) for one node; unset, a
 *   cluster exactly when the URL names several nodes;
 * - `OZ0_REDIS_USERNAME` and `OZ0_REDIS_PASSWORD`: the same credentials kept out of the URL
 *   (they win over the URL's), so the URL itself can be shown in logs and errors.
 *
 * On a cluster the client is ioredis' `Cluster`, which routes each command by its key's slot;
 * every script's keys share a hash tag, and the pipelines group their commands by slot
 * (`slots.ts`). The URL is never logged with its password: `redisWhere` gives it redacted.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import { redactUrl } from "../../lib/redact.ts";

/** A connection to one Redis or to a Redis Cluster: what the stores are written against. */
export type RedisClient = Redis | Cluster;

/** What a connection needs of the endpoints (`Endpoints` has these fields). */
export interface RedisEndpoint {
  /** One URL, or for a cluster several seed nodes separated by commas. */
  readonly redisUrl: string;
  /** ACL user (Redis 6+). @default the URL's, else none (the `default` user) */
  readonly redisUsername?: string;
  /** Redis AUTH password. @default the URL's, else none */
  readonly redisPassword?: string;
  /** `OZ0_REDIS_CLUSTER`: a Redis Cluster even with one seed node. @default true when the URL names several nodes */
  readonly redisCluster?: boolean;
}

/** `OZ0_REDIS_CLUSTER` as a flag; undefined when unset. */
export function redisClusterFlag(value: string | undefined): boolean | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "1" || value === "true") return true;
  if (value === "0" || value === "false") return false;
  throw new Error(`OZ0_REDIS_CLUSTER=${JSON.stringify(value)} is not a flag: use 1 (a Redis Cluster) or 0 (one Redis node), or leave it unset to decide by the number of URLs in OZ0_REDIS_URL`);
}

/** The seed URLs of OZ0_REDIS_URL, one or more, separated by commas. */
function seedUrls(redisUrl: string): string[] {
  const seeds = redisUrl.split(",").map((s) => s.trim());
  if (seeds.some((s) => s === "")) throw new Error(`OZ0_REDIS_URL ${JSON.stringify(redisWhere({ redisUrl }))} has an empty entry: separate the nodes of a cluster with single commas (redis://h1:7000,redis://h2:7000)`);
  return seeds;
}

/** True when the endpoint names a Redis Cluster (several seed nodes, or the flag). */
export function isRedisCluster(endpoint: RedisEndpoint): boolean {
  const several = seedUrls(endpoint.redisUrl).length > 1;
  if (several && endpoint.redisCluster === false) throw new Error(`OZ0_REDIS_URL ${redisWhere(endpoint)} names several nodes, which only a Redis Cluster takes, but OZ0_REDIS_CLUSTER=0 says one node: give one URL, or set OZ0_REDIS_CLUSTER=1`);
  return several || endpoint.redisCluster === true;
}

/** The ioredis options of one node's URL: credentials from the fields over the URL's, TLS for `rediss://`. */
function nodeOptions(endpoint: RedisEndpoint, redisUrl: string): RedisOptions {
  let url: URL;
  try {
    url = new URL(redisUrl);
  } catch {
    throw new Error(`OZ0_REDIS_URL ${JSON.stringify(redactUrl(redisUrl))} is not a URL: use redis://host:port or rediss://host:port`);
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new Error(`OZ0_REDIS_URL ${redactUrl(redisUrl)} must start with redis:// or rediss:// (TLS)`);
  }
  const db = url.pathname.replace(/^\//, "");
  if (db !== "" && !/^\d+$/.test(db)) throw new Error(`OZ0_REDIS_URL ${redactUrl(redisUrl)} names database ${JSON.stringify(db)}: a database is a number`);
  const username = endpoint.redisUsername || decodeURIComponent(url.username) || undefined;
  const password = endpoint.redisPassword || decodeURIComponent(url.password) || undefined;
  return {
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port: url.port ? Number(url.port) : 6379,
    ...(db !== "" ? { db: Number(db) } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(url.protocol === "rediss:" ? { tls: { servername: url.hostname } } : {}),
  };
}

/** The ioredis options of a one-node endpoint; `options` add to or override the defaults. */
export function redisOptions(endpoint: RedisEndpoint, options: RedisOptions = {}): RedisOptions {
  return { ...nodeOptions(endpoint, endpoint.redisUrl), ...options };
}

/** The options that belong to the cluster as a whole rather than to each node's connection. */
const CLUSTER_LEVEL = ["lazyConnect", "enableAutoPipelining", "enableOfflineQueue", "enableReadyCheck", "retryStrategy"] as const;

/**
 * The seed nodes and ioredis `Cluster` options of a cluster endpoint. Every seed must speak
 * the same scheme and name no database but 0 (a cluster has only database 0). Credentials
 * and TLS apply to every node the cluster reports, not only to the seeds; with TLS each node
 * is checked against its own host name. `retryStrategy` becomes the cluster's
 * `clusterRetryStrategy`; the other `options` go to each node's connection.
 */
export function redisClusterOptions(endpoint: RedisEndpoint, options: RedisOptions = {}): { seeds: Array<{ host: string; port: number }>; options: ClusterOptions } {
  const urls = seedUrls(endpoint.redisUrl);
  const nodes = urls.map((u) => nodeOptions(endpoint, u));
  const schemes = new Set(urls.map((u) => new URL(u).protocol));
  if (schemes.size > 1) throw new Error(`OZ0_REDIS_URL ${redisWhere(endpoint)} mixes redis:// and rediss://: the nodes of one cluster all speak TLS or none does`);
  const withDb = nodes.findIndex((n) => n.db !== undefined && n.db !== 0);
  if (withDb >= 0) throw new Error(`OZ0_REDIS_URL ${redactUrl(urls[withDb] ?? "")} names database ${nodes[withDb]?.db ?? ""}: a Redis Cluster has only database 0; leave the database out`);
  const first = nodes[0] ?? {};
  const node: RedisOptions = {
    ...(first.username !== undefined ? { username: first.username } : {}),
    ...(first.password !== undefined ? { password: first.password } : {}),
    ...(first.tls !== undefined ? { tls: {} } : {}),
  };
  const cluster: ClusterOptions = {};
  const perNode: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(options)) {
    if ((CLUSTER_LEVEL as readonly string[]).includes(name)) continue;
    perNode[name] = value;
  }
  if (options.lazyConnect !== undefined) cluster.lazyConnect = options.lazyConnect;
  if (options.enableAutoPipelining !== undefined) cluster.enableAutoPipelining = options.enableAutoPipelining;
  if (options.enableOfflineQueue !== undefined) cluster.enableOfflineQueue = options.enableOfflineQueue;
  if (options.enableReadyCheck !== undefined) cluster.enableReadyCheck = options.enableReadyCheck;
  if (options.retryStrategy !== undefined) cluster.clusterRetryStrategy = options.retryStrategy;
  return {
    seeds: nodes.map((n) => ({ host: n.host ?? "127.0.0.1", port: n.port ?? 6379 })),
    options: {
      ...cluster,
      redisOptions: { ...node, ...(perNode as RedisOptions) },
      // A TLS node is checked against the name it was reached by, not an address it resolved to.
      ...(first.tls !== undefined ? { dnsLookup: (address: string, callback: (err: null, address: string) => void) => callback(null, address) } : {}),
    },
  };
}

/** A connection to the endpoint (one node or a cluster), with its AUTH and TLS; `options` add to or override the defaults. */
export function redisClient(endpoint: RedisEndpoint, options: RedisOptions = {}): RedisClient {
  let client: RedisClient;
  if (isRedisCluster(endpoint)) {
    const c = redisClusterOptions(endpoint, options);
    client = new Cluster(c.seeds, c.options);
  } else {
    client = new Redis(redisOptions(endpoint, options));
  }
  // A lost connection shows in the commands that fail (the runner logs and retries them) and
  // ioredis reconnects by itself; unheard, each reconnect attempt would print outside the
  // structured log.
  client.on("error", () => {});
  return client;
}

/** Where the connection goes, fit for a log line or an error: the URL (each seed's) without its password. */
export function redisWhere(endpoint: RedisEndpoint): string {
  return endpoint.redisUrl.split(",").map((u) => redactUrl(u.trim())).join(",");
}
