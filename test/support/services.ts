/**
 * Finds the real services integration tests run against, in this order:
 *  1. endpoints given by the environment (OZ0_KAFKA_BROKERS, OZ0_REGISTRY_URL, OZ0_REDIS_URL,
 *     OZ0_MINIO_URL and credentials);
 *  2. containers, when a Docker engine answers (testcontainers);
 *  3. the project's local stack (`stack/up.sh`), started when it is not running.
 * It never falls back to a mock: when none of these works, it fails and says why.
 *
 * With `OZ0_TEST_REDIS=cluster` the tests' Redis is a Redis Cluster instead: the one
 * `OZ0_REDIS_CLUSTER_URL` names, else the local stack's cluster profile (`stack/up.sh
 * --redis-cluster`, started when it does not answer). A cluster that cannot be reached fails
 * the tests, saying so; they never fall back to the single node.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ensureLocalStack, localStackEnv, stackScript } from "../../topology/stack.ts";
import { endpointsFromEnv, endpointsGiven, type Endpoints } from "../../processors/runner/endpoints.ts";
import { waitForServices } from "./health.ts";

const run = promisify(execFile);

export interface Services {
  endpoints: Endpoints;
  mode: "environment" | "containers" | "local-stack";
  /** Whether the tests' Redis is a Redis Cluster (`OZ0_TEST_REDIS=cluster`). */
  redisCluster: boolean;
  /** Stops what this resolution started, and nothing else. */
  stop(): Promise<void>;
}

async function dockerAnswers(): Promise<boolean> {
  if (process.env.OZ0_NO_CONTAINERS === "1") return false;
  try {
    await run("docker", ["info", "--format", "{{.ServerVersion}}"], { timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

async function localStack(): Promise<Services> {
  let stack;
  try {
    stack = await ensureLocalStack();
  } catch (err) {
    throw new Error(
      `integration tests need Kafka, a schema registry, Redis and MinIO: no endpoints were given (OZ0_*), no Docker engine answers, and the local stack did not come up: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  await waitForServices(stack.endpoints, 120_000);
  return {
    endpoints: stack.endpoints,
    mode: "local-stack",
    redisCluster: false,
    stop: async () => {
      if (!stack.wasRunning && process.env.OZ0_KEEP_STACK !== "1") await stackScript("down", true);
    },
  };
}

async function servicesOf(): Promise<Services> {
  if (endpointsGiven()) {
    const endpoints = endpointsFromEnv();
    await waitForServices(endpoints, 60_000);
    return { endpoints, mode: "environment", redisCluster: false, stop: async () => {} };
  }
  if (await dockerAnswers()) {
    const { startContainers } = await import("./containers.ts");
    return startContainers();
  }
  return localStack();
}

/** `OZ0_TEST_REDIS`: `node` (the default) or `cluster`. */
function testRedis(): "node" | "cluster" {
  const v = process.env.OZ0_TEST_REDIS ?? "node";
  if (v === "node" || v === "") return "node";
  if (v === "cluster") return "cluster";
  throw new Error(`OZ0_TEST_REDIS=${JSON.stringify(v)}: use node (the single Redis, the default) or cluster (a Redis Cluster: OZ0_REDIS_CLUSTER_URL, else the local stack's, stack/up.sh --redis-cluster)`);
}

/** The services with a Redis Cluster in place of their Redis, starting the local stack's cluster profile when it is the one meant and does not answer. */
async function onCluster(services: Services): Promise<Services> {
  const given = process.env.OZ0_REDIS_CLUSTER_URL;
  const endpoints: Endpoints = { ...services.endpoints, redisUrl: given ?? localStackEnv().OZ0_REDIS_CLUSTER_URL ?? "", redisCluster: true };
  let started = false;
  if (given === undefined && (await stackScript("status", false, [], { OZ0_STACK_REDIS: "cluster" })) !== 0) {
    process.stderr.write("starting the local stack's Redis Cluster (bash stack/up.sh --redis-cluster)\n");
    if ((await stackScript("up", true, ["--redis-cluster"])) !== 0) throw new Error("OZ0_TEST_REDIS=cluster: `bash stack/up.sh --redis-cluster` failed: its output above names the node, the reason and the log");
    started = true;
  }
  try {
    await waitForServices(endpoints, 60_000);
  } catch (err) {
    throw new Error(`OZ0_TEST_REDIS=cluster: the Redis Cluster at ${endpoints.redisUrl} does not answer (${given === undefined ? "the local stack's, stack/up.sh --redis-cluster" : "OZ0_REDIS_CLUSTER_URL"}): ${err instanceof Error ? err.message : String(err)}`);
  }
  return {
    endpoints,
    mode: services.mode,
    redisCluster: true,
    stop: async () => {
      if (started && process.env.OZ0_KEEP_STACK !== "1") await stackScript("down", true, ["--only", "redis-cluster"]);
      await services.stop();
    },
  };
}

export async function resolveServices(): Promise<Services> {
  const redis = testRedis();
  const services = await servicesOf();
  return redis === "cluster" ? onCluster(services) : services;
}
