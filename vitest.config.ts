import { readdirSync } from "node:fs";
import { configDefaults, defineConfig } from "vitest/config";

const CLUSTER_DIR = "test/integration/cluster";
// Tests that need a Kafka cluster of three brokers (replicated topics, transactions on them):
// only with OZ0_TEST_KAFKA=cluster (CI's Kafka cluster step); otherwise left out, not skipped.
const KAFKA_CLUSTER_ONLY = readdirSync(CLUSTER_DIR).filter((f) => f.startsWith("kafka-") && f.endsWith(".test.ts")).map((f) => `${CLUSTER_DIR}/${f}`);
// Tests that need a Redis Cluster (slot migrations): the rest of the folder, only with
// OZ0_TEST_REDIS=cluster (test/support/services.ts); on one node they are left out of the run, not skipped.
const CLUSTER_ONLY = readdirSync(CLUSTER_DIR).filter((f) => !KAFKA_CLUSTER_ONLY.includes(`${CLUSTER_DIR}/${f}`)).map((f) => `${CLUSTER_DIR}/${f}`);

// Two projects: `unit` needs no services and runs in milliseconds; `integration` runs against
// real Kafka, schema registry, Redis and MinIO, which its global setup finds or starts.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          exclude: [
            ...configDefaults.exclude,
            ...(process.env.OZ0_TEST_REDIS === "cluster" ? [] : CLUSTER_ONLY),
            ...(process.env.OZ0_TEST_KAFKA === "cluster" ? [] : KAFKA_CLUSTER_ONLY),
          ],
          environment: "node",
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          fileParallelism: false,
          // The tests read traces and the audit log right after their events: the sinks flush
          // every 2 s (or 1 MiB) here, not every 10 s (or 8 MiB) as by default, so each such
          // wait is seconds shorter. The same code runs either way; only the window differs.
          env: { OZ0_SINK_MAX_WAIT_MS: "2000", OZ0_SINK_MIN_BYTES: "1048576" },
        },
      },
    ],
  },
});
