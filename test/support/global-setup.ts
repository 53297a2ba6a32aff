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
import type { Endpoints } from "../../processors/runner/endpoints.ts";
import { resolveServices, type Services } from "./services.ts";

declare module "vitest" {
  export interface ProvidedContext {
    endpoints: Endpoints;
  }
}

let services: Services | undefined;

export async function setup(project: TestProject): Promise<void> {
  services = await resolveServices();
  const e = services.endpoints;
  process.stderr.write(`integration tests: services from ${services.mode}: kafka ${e.kafkaBrokers.join(",")}, registry ${e.registryUrl}, redis ${e.redisUrl}, minio ${e.minioUrl}\n`);
  const admin = new Kafka({ clientId: "oz0-test-setup", brokers: e.kafkaBrokers, logLevel: logLevel.WARN }).admin();
  await admin.connect();
  try {
    await ensureTopics(admin, TOPICS);
  } finally {
    await admin.disconnect();
  }
  await new Serde({ registryUrl: e.registryUrl }).registerAll();
  Object.assign(process.env, {
    OZ0_KAFKA_BROKERS: e.kafkaBrokers.join(","),
    OZ0_REGISTRY_URL: e.registryUrl,
    OZ0_REDIS_URL: e.redisUrl,
    OZ0_MINIO_URL: e.minioUrl,
    OZ0_MINIO_ACCESS_KEY: e.minioAccessKey,
    OZ0_MINIO_SECRET_KEY: e.minioSecretKey,
  });
  project.provide("endpoints", e);
}

export async function teardown(): Promise<void> {
  await services?.stop();
}
