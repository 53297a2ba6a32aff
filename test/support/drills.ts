/**
 * The fault drills as tests: the services a drill needs, opened once a file, a drill run that
 * prints what happened when a check fails, and the checks every clean drill passes.
 */
import { afterAll, beforeAll, expect } from "vitest";
import { disruptDrill, type DisruptOptions } from "../../drills/disrupt.ts";
import type { Services } from "../../drills/lab.ts";
import { passed, type DrillRow } from "../../drills/report.ts";
import { minioClient } from "../../store/objects.ts";
import { redisClient } from "../../store/redis/client.ts";
import { endpoints, kafka, serde } from "./kafka.ts";

/** Opens the drill services before the file's tests and closes them after; `drill` runs one. */
export function drillServices(): { drill: (o: DisruptOptions) => Promise<DrillRow> } {
  let services: Services | undefined;
  beforeAll(async () => {
    const e = endpoints();
    const k = kafka();
    const admin = k.admin();
    await admin.connect();
    const redis = redisClient(e, { maxRetriesPerRequest: 3 });
    // Redis is stopped on purpose by an outage drill; the client reconnects by itself.
    redis.on("error", () => {});
    services = { kafka: k, admin, serde: await serde(), redis, minio: minioClient(e), endpoints: e };
  });
  afterAll(async () => {
    await services?.admin.disconnect();
    services?.redis.disconnect();
  });
  return {
    drill: async (o: DisruptOptions): Promise<DrillRow> => {
      if (!services) throw new Error("the drill services were not opened: call drillServices() at the top of the test file");
      const lines: string[] = [];
      const row = await disruptDrill(services, { ...o, say: (l) => lines.push(l) });
      // The row's figures, and what happened, when a check fails.
      if (!passed(row)) console.error([...lines, JSON.stringify(row, null, 2)].join("\n"));
      return row;
    },
  };
}

/** `copies`: whether outputs may be read twice (then only as true copies under one ID, which consumers drop). */
export function expectClean(row: DrillRow, inputs: number, copies = false): void {
  expect(row.inputs).toBe(inputs);
  expect(row.lost).toBe(0);
  if (!copies) expect(row.duplicated).toBe(0);
  expect(row.deadLettered).toBe(0);
  expect(row.details).toEqual([]);
  for (const [name, ok] of Object.entries(row.checks)) expect(ok, name).toBe(true);
}
