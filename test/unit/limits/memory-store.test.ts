/**
 * The limits' two smaller ports in memory (processors/limits/memory-store.ts), held to the same
 * suites the Redis stores run on the real Redis (test/integration/limits-ports.test.ts).
 */
import { describe } from "vitest";
import { memoryStandingStore, memoryUnknownOutcomeStore } from "../../../processors/limits/memory-store.ts";
import { standingStoreBehaviour, unknownOutcomeStoreBehaviour } from "../../support/limits-ports.ts";

describe("memoryStandingStore: jobs' standings in memory", () => {
  standingStoreBehaviour(() => {
    const store = memoryStandingStore();
    return {
      store,
      seed: (tenant, tree, fields) => {
        const key = `${encodeURIComponent(tenant)}/${tree}`;
        const hash = store.hashes.get(key) ?? new Map<string, string>();
        for (const [f, v] of Object.entries(fields)) hash.set(f, v);
        store.hashes.set(key, hash);
        return Promise.resolve();
      },
    };
  });
});

describe("memoryUnknownOutcomeStore: LIM-11 unknown outcomes in memory", () => {
  unknownOutcomeStoreBehaviour(() => memoryUnknownOutcomeStore());
});
