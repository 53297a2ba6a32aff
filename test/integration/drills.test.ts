/**
 * The fault drills (docs/reliability.md) in a shorter form: a processor in a process of its own
 * is killed, rebalanced, or loses a service of the stack while inputs stream in, and its answers
 * and Redis state must equal an undisturbed reference run of the same inputs.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { disruptDrill, type DisruptOptions } from "../../drills/disrupt.ts";
import type { Services } from "../../drills/lab.ts";
import { passed, type DrillRow } from "../../drills/report.ts";
import { minioClient } from "../../store/objects.ts";
import { endpoints, kafka, serde } from "../support/kafka.ts";

let services: Services;

beforeAll(async () => {
  const e = endpoints();
  const k = kafka();
  const admin = k.admin();
  await admin.connect();
  services = { kafka: k, admin, serde: await serde(), redis: new Redis(e.redisUrl, { maxRetriesPerRequest: 3 }), minio: minioClient(e), endpoints: e };
});

afterAll(async () => {
  await services.admin.disconnect();
  services.redis.disconnect();
});

async function drill(o: DisruptOptions): Promise<DrillRow> {
  const lines: string[] = [];
  const row = await disruptDrill(services, { ...o, say: (l) => lines.push(l) });
  // The row's figures, and what happened, when a check fails.
  if (!passed(row)) console.error([...lines, JSON.stringify(row, null, 2)].join("\n"));
  return row;
}

/** `copies`: whether outputs may be read twice (then only as true copies under one ID, which consumers drop). */
function expectClean(row: DrillRow, inputs: number, copies = false): void {
  expect(row.inputs).toBe(inputs);
  expect(row.lost).toBe(0);
  if (!copies) expect(row.duplicated).toBe(0);
  expect(row.deadLettered).toBe(0);
  expect(row.details).toEqual([]);
  for (const [name, ok] of Object.entries(row.checks)) expect(ok, name).toBe(true);
}

describe("fault drills", () => {
  it("SYS-3 kill -9 of loop-calls mid-stream: every call decided once, the same decisions and loop state as an undisturbed run", async () => {
    expectClean(await drill({ subject: "loop-calls", events: 600, rate: 300, times: 1, disruption: { kind: "kill9" } }), 600);
  }, 240_000);

  it("SYS-4 kill -9 of limits-model-calls mid-stream: the same admissions, spend and counters as an undisturbed run", async () => {
    expectClean(await drill({ subject: "limits-model-calls", events: 600, rate: 300, times: 1, disruption: { kind: "kill9" } }), 600);
  }, 240_000);

  it("SYS-2 kill -9 of fit-results while it offloads to MinIO: every result delivered once, the same refs and stubs", async () => {
    expectClean(await drill({ subject: "fit-offload", events: 200, rate: 100, times: 1, disruption: { kind: "kill9" } }), 200);
  }, 240_000);

  it("SYS-4 a rebalance mid-tree (an instance joins, then one leaves): no admission beyond a limit, the same answers", async () => {
    expectClean(await drill({ subject: "limits-model-calls", events: 600, rate: 300, times: 2, disruption: { kind: "rebalance" } }), 600, true);
  }, 240_000);

  it("SYS-3 a rebalance mid-run: no loop missed, the same decisions and loop state", async () => {
    expectClean(await drill({ subject: "loop-calls", events: 600, rate: 300, times: 2, disruption: { kind: "rebalance" } }), 600, true);
  }, 240_000);
});
