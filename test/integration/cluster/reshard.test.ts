/**
 * Slots of the Redis Cluster move (`redis-cli --cluster reshard`) while a processor decides
 * inputs streaming in: its answers and Redis state must equal an undisturbed run's. Runs only
 * with OZ0_TEST_REDIS=cluster (vitest.config.ts leaves the folder out otherwise).
 */
import { describe, it } from "vitest";
import { isRedisCluster } from "../../../store/redis/client.ts";
import { drillServices, expectClean } from "../../support/drills.ts";
import { endpoints } from "../../support/kafka.ts";

const { drill } = drillServices();

function needCluster(): void {
  if (!isRedisCluster(endpoints())) throw new Error("the slot migration drills need a Redis Cluster: run them with OZ0_TEST_REDIS=cluster");
}

describe("slot migrations on a Redis Cluster", () => {
  it("SYS-3 slots of the loop state move twice mid-stream: every call decided once, the same decisions and loop state as an undisturbed run", async () => {
    needCluster();
    expectClean(await drill({ subject: "loop-calls", events: 600, rate: 200, times: 2, disruption: { kind: "reshard", slots: 4096 } }), 600, true);
  }, 240_000);

  it("SYS-4 slots of the trees and the tenants' months move twice mid-stream: the same admissions, spend and counters", async () => {
    needCluster();
    expectClean(await drill({ subject: "limits-model-calls", events: 600, rate: 200, times: 2, disruption: { kind: "reshard", slots: 4096 } }), 600, true);
  }, 240_000);
});
