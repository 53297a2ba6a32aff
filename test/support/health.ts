/**
 * Waits until each service really answers: Kafka metadata, the registry's subjects, Redis
 * PING, MinIO's readiness. A service that does not answer in time is named in the error.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Kafka, logLevel } from "kafkajs";
import { redisClient } from "../../store/redis/client.ts";
import { kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { redactUrl } from "../../lib/redact.ts";

type Check = { name: string; where: string; probe: () => Promise<void> };

function checks(e: Endpoints): Check[] {
  return [
    {
      name: "Kafka",
      where: e.kafkaBrokers.join(","),
      probe: async () => {
        const admin = new Kafka({ ...kafkaConfig("oz0-health", e), logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 3_000 }).admin();
        try {
          await admin.connect();
          await admin.describeCluster();
        } finally {
          await admin.disconnect();
        }
      },
    },
    {
      name: "schema registry",
      where: redactUrl(e.registryUrl),
      probe: async () => {
        const res = await fetch(`${e.registryUrl}/subjects`, { signal: AbortSignal.timeout(3_000) });
        if (!res.ok) throw new Error(`GET /subjects answered ${res.status}`);
      },
    },
    {
      name: "Redis",
      where: redactUrl(e.redisUrl),
      probe: async () => {
        const redis = redisClient(e, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3_000, retryStrategy: () => null });
        try {
          await redis.connect();
          await redis.ping();
        } finally {
          redis.disconnect();
        }
      },
    },
    {
      name: "MinIO",
      where: redactUrl(e.minioUrl),
      probe: async () => {
        const res = await fetch(`${e.minioUrl}/minio/health/ready`, { signal: AbortSignal.timeout(3_000) });
        if (!res.ok) throw new Error(`GET /minio/health/ready answered ${res.status}`);
      },
    },
  ];
}

export async function waitForServices(e: Endpoints, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const failures: string[] = [];
  await Promise.all(
    checks(e).map(async (c) => {
      let last = "";
      while (Date.now() < deadline) {
        try {
          await c.probe();
          return;
        } catch (err) {
          last = err instanceof Error ? err.message : String(err);
          await sleep(500);
        }
      }
      failures.push(`${c.name} at ${c.where} did not answer within ${Math.round(timeoutMs / 1000)} s: ${last}`);
    }),
  );
  if (failures.length > 0) throw new Error(`services are not ready:\n  ${failures.join("\n  ")}`);
}
