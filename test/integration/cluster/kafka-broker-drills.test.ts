/**
 * The broker drills' short form on the stack's Kafka cluster of three brokers (`npm run drill --
 * broker-loss | rolling`, drills/disrupt.ts): under load, the broker leading most of the lab's
 * partitions SIGKILLed, then the one coordinating the worker's transactions, then the three
 * restarted one at a time; each time every input answered, as an undisturbed run answers it,
 * no output committed twice, and the same Redis state. Fails, never skips, when
 * the drill's Kafka is not the stack's cluster of three brokers. Runs only with
 * OZ0_TEST_KAFKA=cluster (CI's Kafka cluster step).
 */
import { describe, expect, it } from "vitest";
import { drillServices, expectClean } from "../../support/drills.ts";

const { drill } = drillServices();

describe("a broker lost mid-load and a rolling restart, on the Kafka cluster of three brokers", () => {
  it("SYS-3 the broker leading most of the lab's partitions SIGKILLed for 3 s: every call decided, the same decisions and loop state as an undisturbed run", async () => {
    const row = await drill({ subject: "loop-calls", events: 400, rate: 200, times: 1, disruption: { kind: "broker-loss", target: "leader", downMs: 3_000 }, drainMs: 90_000 });
    expectClean(row, 400);
    expect(row.notes?.length).toBe(1);
  }, 240_000);

  it("SYS-4 the broker coordinating the worker's transactions SIGKILLed for 3 s: the same admissions, spend and counters", async () => {
    const row = await drill({ subject: "limits-model-calls", events: 400, rate: 200, times: 1, disruption: { kind: "broker-loss", target: "coordinator", downMs: 3_000 }, drainMs: 90_000 });
    expectClean(row, 400);
    expect(row.notes?.length).toBe(1);
  }, 240_000);

  it("SYS-3 the three brokers restarted one at a time (SIGTERM, back in the ISR of every partition, then the next): the same decisions and loop state", async () => {
    const row = await drill({ subject: "loop-calls", events: 600, rate: 100, times: 1, disruption: { kind: "rolling" }, drainMs: 120_000 });
    expectClean(row, 600);
    expect(row.notes?.length).toBe(3);
  }, 300_000);
});
