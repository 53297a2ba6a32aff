/**
 * Integration tests' global setup: find or start the real services, create the declared
 * topics, register the schemas, and hand the endpoints to every test file.
 */
import type {} from "vitest";
import type { TestProject } from "vitest/node";
import { Kafka, logLevel } from "kafkajs";
import { Serde } from "../../schemas/serde.ts";
import { ensureTopics } from "../../topology/create.ts";
import { TOPICS } from "../../topology/topics.ts";
import { endpointsEnv, kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { redactUrl } from "../../lib/redact.ts";
import { redisWhere } from "../../store/redis/client.ts";
import { resolveServices, type Services } from "./services.ts";

declare module "vitest" {
  export interface ProvidedContext {
    endpoints: Endpoints;
    /** Where the services come from; only the local stack can be stopped and started by a drill. */
    servicesMode: Services["mode"];
  }
}

let services: Services | undefined;

export async function setup(project: TestProject): Promise<void> {
  services = await resolveServices();
  const e = services.endpoints;
  process.stderr.write(`integration tests: services from ${services.mode}: kafka ${e.kafkaBrokers.join(",")}, registry ${redactUrl(e.registryUrl)}, redis ${services.redisCluster ? "cluster " : ""}${redisWhere(e)}, minio ${redactUrl(e.minioUrl)}\n`);
  const admin = new Kafka({ ...kafkaConfig("oz0-test-setup", e), logLevel: logLevel.WARN }).admin();
  await admin.connect();
  try {
    await ensureTopics(admin, TOPICS);
  } finally {
    await admin.disconnect();
  }
  await new Serde({ registryUrl: e.registryUrl }).registerAll();
  Object.assign(process.env, endpointsEnv(e));
  // A test's whole pipeline does not sweep the shared buckets on a timer (FILE-6, OFF-10): the
  // retention tests drive the sweep themselves, on buckets and tenants of their own.
  process.env.OZ0_RETENTION_EVERY ??= "off";
  project.provide("endpoints", e);
  project.provide("servicesMode", services.mode);
}

export async function teardown(): Promise<void> {
  await services?.stop();
}
