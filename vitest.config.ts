import { configDefaults, defineConfig } from "vitest/config";

// Tests that need a Redis Cluster (slot migrations): only with OZ0_TEST_REDIS=cluster
// (test/support/services.ts); on one node they are left out of the run, not skipped.
const CLUSTER_ONLY = "test/integration/cluster/**";

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
          exclude: [...configDefaults.exclude, ...(process.env.OZ0_TEST_REDIS === "cluster" ? [] : [CLUSTER_ONLY])],
          environment: "node",
          globalSetup: ["test/support/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
