import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { PIPELINE } from "../../../processors/pipeline.ts";
import { AuditLog } from "../../../processors/audit-sink/store.ts";
import { endpointsFromEnv } from "../../../processors/runner/endpoints.ts";
import { SINKS, sinkStores } from "../../../processors/sinks.ts";
import { TraceStore } from "../../../store/trace-store.ts";

describe("the sinks' wiring", () => {
  it("SYS-5 npm start runs a trace sink and an audit sink processor per topic they read, writing no topic", () => {
    const sinks = PIPELINE.filter((e) => e.processor.name.includes("-sink-")).map((e) => [e.processor.name, e.processor.input, e.processor.outputs.length]);
    expect(sinks).toEqual([
      ["trace-sink-trace", "oz0.trace", 0],
      ["trace-sink-call-decisions", "oz0.call-decisions", 0],
      ["trace-sink-admissions", "oz0.admissions", 0],
      ["trace-sink-jobs", "oz0.jobs", 0],
      ["audit-sink-audit", "oz0.audit", 0],
      ["audit-sink-call-decisions", "oz0.call-decisions", 0],
      ["audit-sink-loop-approvals", "oz0.loop-approvals", 0],
      ["audit-sink-admissions", "oz0.admissions", 0],
      ["audit-sink-config", "oz0.config", 0],
    ]);
    expect(new Set(PIPELINE.map((e) => e.processor.name)).size).toBe(PIPELINE.length);
  });

  it("SYS-5 the sinks share one trace store (indexed on the pipeline's Redis) and one audit log per set of endpoints, from the environment's buckets", () => {
    const endpoints = endpointsFromEnv({});
    // Never connected: the stores only keep the connection.
    const redis = new Redis({ lazyConnect: true });
    const envs = SINKS.map((s) => s.env({ endpoints, redis }));
    expect(envs.slice(0, 4).every((e) => e instanceof TraceStore && e === envs[0] && e.index?.redis === redis)).toBe(true);
    expect(envs.slice(4).every((e) => e instanceof AuditLog && e === envs[4])).toBe(true);
    const other = sinkStores(endpointsFromEnv({}), { OZ0_TRACE_BUCKET: "t", OZ0_AUDIT_BUCKET: "a", OZ0_AUDIT_LOCK_MODE: "GOVERNANCE", OZ0_AUDIT_RETENTION_DAYS: "7" });
    expect([other.traces.bucket, other.audit.bucket, other.audit.mode, other.audit.retentionDays]).toEqual(["t", "a", "GOVERNANCE", 7]);
  });
});
