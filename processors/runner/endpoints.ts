/**
 * Where the services are, from the environment. Defaults are the local stack's ports
 * (`stack/env.sh`); nothing secret is hard-coded beyond the local stack's documented
 * development credentials, and every value can be overridden.
 */
import type { RedisOptions } from "ioredis";
import { logLevel, type KafkaConfig, type ProducerConfig, type SASLOptions } from "kafkajs";
import { LOCAL_STACK } from "../../stack/local.ts";
import { redisClusterFlag } from "../../store/redis/client.ts";
import { createLogger, kafkaLogCreator, type Logger } from "./log.ts";
import { RememberingPartitioner } from "./partitioner.ts";
import type { Endpoints } from "../../lib/endpoints.ts";

export type { Endpoints };

/** The local stack's, with its documented development credentials (kept in stack/, never here). */
const LOCAL = LOCAL_STACK;

type Env = Record<string, string | undefined>;

/** `OZ0_STACK_REDIS`: which Redis of the local stack is meant when OZ0_REDIS_URL is not set, as `stack/env.sh` reads it. */
function stackRedis(env: Env): "node" | "cluster" {
  const v = env.OZ0_STACK_REDIS || "node";
  if (v !== "node" && v !== "cluster") throw new Error(`OZ0_STACK_REDIS=${JSON.stringify(v)}: use node (one Redis, the default) or cluster (the local stack's Redis Cluster)`);
  return v;
}

export function endpointsFromEnv(env: Env = process.env): Endpoints {
  const get = (k: keyof typeof LOCAL): string => env[k] || LOCAL[k];
  const redisCluster = redisClusterFlag(env.OZ0_REDIS_CLUSTER);
  return {
    kafkaBrokers: get("OZ0_KAFKA_BROKERS").split(",").map((s) => s.trim()).filter(Boolean),
    registryUrl: get("OZ0_REGISTRY_URL").replace(/\/+$/, ""),
    redisUrl: env.OZ0_REDIS_URL || (stackRedis(env) === "cluster" ? get("OZ0_REDIS_CLUSTER_URL") : LOCAL.OZ0_REDIS_URL),
    ...(redisCluster !== undefined ? { redisCluster } : {}),
    ...(env.OZ0_REDIS_USERNAME ? { redisUsername: env.OZ0_REDIS_USERNAME } : {}),
    ...(env.OZ0_REDIS_PASSWORD ? { redisPassword: env.OZ0_REDIS_PASSWORD } : {}),
    minioUrl: get("OZ0_MINIO_URL"),
    minioAccessKey: get("OZ0_MINIO_ACCESS_KEY"),
    minioSecretKey: get("OZ0_MINIO_SECRET_KEY"),
  };
}

/**
 * The endpoints as the environment variables `endpointsFromEnv` reads: what a child process
 * (a drill's worker, a command a test runs) is handed to reach the same services, Redis
 * credentials kept out of the URL included.
 */
export function endpointsEnv(e: Endpoints): Record<string, string> {
  return {
    OZ0_KAFKA_BROKERS: e.kafkaBrokers.join(","),
    OZ0_REGISTRY_URL: e.registryUrl,
    OZ0_REDIS_URL: e.redisUrl,
    ...(e.redisCluster !== undefined ? { OZ0_REDIS_CLUSTER: e.redisCluster ? "1" : "0" } : {}),
    ...(e.redisUsername ? { OZ0_REDIS_USERNAME: e.redisUsername } : {}),
    ...(e.redisPassword ? { OZ0_REDIS_PASSWORD: e.redisPassword } : {}),
    OZ0_MINIO_URL: e.minioUrl,
    OZ0_MINIO_ACCESS_KEY: e.minioAccessKey,
    OZ0_MINIO_SECRET_KEY: e.minioSecretKey,
  };
}

/** True when every endpoint was given by the environment (the services are someone else's). */
export function endpointsGiven(env: Env = process.env): boolean {
  return Boolean(env.OZ0_KAFKA_BROKERS && env.OZ0_REGISTRY_URL && env.OZ0_REDIS_URL && env.OZ0_MINIO_URL);
}

/**
 * ioredis settings of the pipeline's shared connection. Auto-pipelining writes the commands
 * issued in one tick (such as those of the trees a limits batch decides at once) to the socket
 * together; each command still runs alone and in order, so every script stays atomic, and
 * explicit pipelines (the loop store's) are unchanged.
 */
export const PIPELINE_REDIS = { maxRetriesPerRequest: 3, enableAutoPipelining: true } satisfies RedisOptions;

/**
 * Settings of every idempotent or transactional producer: the Java client's partitioner (so
 * keys land where other clients put them; each key's partition remembered, `partitioner.ts`)
 * and retries without limit, as exactly-once needs.
 */
export const EXACTLY_ONCE_PRODUCER = {
  idempotent: true,
  maxInFlightRequests: 1,
  createPartitioner: RememberingPartitioner,
  retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 20, maxRetryTime: 5_000 },
} satisfies ProducerConfig;

/**
 * kafkajs settings, with TLS (`OZ0_KAFKA_SSL=1`) and SASL (`OZ0_KAFKA_SASL_MECHANISM` of
 * plain, scram-sha-256 or scram-sha-512, with `OZ0_KAFKA_USERNAME` and `OZ0_KAFKA_PASSWORD`)
 * from the environment.
 */
export function kafkaConfig(clientId: string, endpoints: Endpoints, env: Env = process.env, log: Logger = createLogger()): KafkaConfig {
  const config: KafkaConfig = {
    clientId,
    logLevel: logLevel.INFO,
    logCreator: kafkaLogCreator(log),
    brokers: endpoints.kafkaBrokers,
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { retries: 8, initialRetryTime: 200, maxRetryTime: 5_000 },
  };
  if (env.OZ0_KAFKA_SSL === "1" || env.OZ0_KAFKA_SSL === "true") config.ssl = true;
  const mechanism = env.OZ0_KAFKA_SASL_MECHANISM;
  if (mechanism) {
    const username = env.OZ0_KAFKA_USERNAME ?? "";
    const password = env.OZ0_KAFKA_PASSWORD ?? "";
    if (mechanism !== "plain" && mechanism !== "scram-sha-256" && mechanism !== "scram-sha-512") {
      throw new Error(`OZ0_KAFKA_SASL_MECHANISM=${mechanism} is not supported: use plain, scram-sha-256 or scram-sha-512`);
    }
    // Named, never quoted: the password is a secret (docs/security.md).
    if (username === "" || password === "") throw new Error(`OZ0_KAFKA_SASL_MECHANISM=${mechanism} needs OZ0_KAFKA_USERNAME and OZ0_KAFKA_PASSWORD; ${username === "" ? "the username" : "the password"} is not set`);
    config.sasl = { mechanism, username, password } as SASLOptions;
  }
  return config;
}
