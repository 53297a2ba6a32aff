/**
 * Finds the real services integration tests run against, in this order:
 *  1. endpoints given by the environment (OZ0_KAFKA_BROKERS, OZ0_REGISTRY_URL, OZ0_REDIS_URL,
 *     OZ0_MINIO_URL and credentials);
 *  2. containers, when a Docker engine answers (testcontainers);
 *  3. the project's local stack (`stack/up.sh`), started when it is not running.
 * It never falls back to a mock: when none of these works, it fails and says why.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ensureLocalStack, stackScript } from "../../bin/stack.ts";
import { endpointsFromEnv, endpointsGiven, type Endpoints } from "../../processors/runner/endpoints.ts";
import { waitForServices } from "./health.ts";

const run = promisify(execFile);

export interface Services {
  endpoints: Endpoints;
  mode: "environment" | "containers" | "local-stack";
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
    stop: async () => {
      if (!stack.wasRunning && process.env.OZ0_KEEP_STACK !== "1") await stackScript("down", true);
    },
  };
}

export async function resolveServices(): Promise<Services> {
  if (endpointsGiven()) {
    const endpoints = endpointsFromEnv();
    await waitForServices(endpoints, 60_000);
    return { endpoints, mode: "environment", stop: async () => {} };
  }
  if (await dockerAnswers()) {
    const { startContainers } = await import("./containers.ts");
    return startContainers();
  }
  return localStack();
}
