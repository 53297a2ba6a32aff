import { describe, expect, it } from "vitest";
import { causedByPipeline, causedTotal, describeCaused, extra, perEvent, recordsPerEvent } from "../../../bench/load/caused.ts";
import { Recorder } from "../../../bench/load/play.ts";
import { causedCpu, loadMarkdown, PIPELINE_ELSEWHERE, type LoadResult, type PhaseResult } from "../../../bench/load/report.ts";
import { STEP_KINDS, TREE_KINDS } from "../../../bench/load/mix.ts";
import type { CpuSpent } from "../../../bench/pipeline/cpu.ts";

const SERVICES = [
  { name: "the broker", pipeline: 1.4, passthrough: 0.5 },
  { name: "MinIO", pipeline: 0.71, passthrough: 0 },
  { name: "Redis", pipeline: 0.25, passthrough: 0.02 },
  { name: "the schema registry", pipeline: 0.03, passthrough: 0.01 },
];

describe("what the pipeline causes per event", () => {
  it("SYS-6 adds its process to each service's extra over the passthrough's phase, never below 0", () => {
    expect(extra({ pipeline: 1.4, passthrough: 0.5 })).toBeCloseTo(0.9, 10);
    // A service that spent less in the pipeline's phase caused nothing: 0, not a negative part.
    expect(extra({ pipeline: 0.2, passthrough: 0.3 })).toBe(0);
    const c = causedByPipeline({ name: "the pipeline's process", ms: 1.99 }, SERVICES);
    expect(c.parts.map((p) => p.name)).toEqual(["the pipeline's process", "the broker's extra", "MinIO's extra", "Redis's extra", "the schema registry's extra"]);
    expect(c.total).toBeCloseTo(1.99 + 0.9 + 0.71 + 0.23 + 0.02, 10);
    expect(c.unknown).toEqual([]);
    expect(causedTotal(c)).toBe("3.85");
    expect(describeCaused(c)).toBe("3.85 = the pipeline's process 1.99 + the broker's extra 0.90 + MinIO's extra 0.71 + Redis's extra 0.23 + the schema registry's extra 0.02");
  });

  it("SYS-6 names a part whose reading is missing as unknown and gives the total as at least the parts known, never adding 0 for it", () => {
    // The broker's passthrough reading is missing; the pipeline's process was not read at all.
    const c = causedByPipeline({ name: "the pipeline's process", ms: null }, [{ name: "the broker", pipeline: 1.4, passthrough: null }, ...SERVICES.slice(1)]);
    expect(c.total).toBeNull();
    expect(c.known).toBeCloseTo(0.71 + 0.23 + 0.02, 10);
    expect(c.unknown).toEqual(["the pipeline's process", "the broker's extra"]);
    expect(causedTotal(c)).toBe("at least 0.96");
    expect(describeCaused(c)).toBe(
      "at least 0.96 = the pipeline's process unknown + the broker's extra unknown + MinIO's extra 0.71 + Redis's extra 0.23 + the schema registry's extra 0.02 (unknown, as a reading is missing: the pipeline's process, the broker's extra; the total counts the parts known)",
    );
    // A pipeline phase's reading missing is as unknown as a passthrough's.
    expect(extra({ pipeline: null, passthrough: 0.1 })).toBeNull();
  });

  it("SYS-6 counts the records written beyond the events published, and any count, per event", () => {
    // 1,000 events published, the topics grew by 3,400 records: 2.4 more per event.
    expect(recordsPerEvent(3_400, 1_000)).toBeCloseTo(2.4, 10);
    // A passthrough's copy is one record an event.
    expect(recordsPerEvent(2_000, 1_000)).toBe(1);
    expect(recordsPerEvent(null, 1_000)).toBeNull();
    expect(recordsPerEvent(undefined, 1_000)).toBeNull();
    expect(recordsPerEvent(10, 0)).toBeNull();
    expect(perEvent(520, 1_000)).toBeCloseTo(0.52, 10);
    expect(perEvent(null, 1_000)).toBeNull();
    expect(perEvent(5, 0)).toBeNull();
  });
});

describe("the load report's caused row", () => {
  const phase = (events: number, cpu: CpuSpent, written?: PhaseResult["written"]): PhaseResult => {
    const rec = new Recorder();
    for (let i = 0; i < events; i++) rec.sent("tool_call", 1_000 + i);
    rec.lastAt = 3_000;
    return { startedAt: 1_000, endedAt: 3_000, rec, lag: [], cpu, ...(written ? { written } : {}) };
  };
  const resultOf = (external: boolean, pipeline: PhaseResult, passthrough: PhaseResult): LoadResult => {
    const twos = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((k) => [k, 2])) as Record<K, number>;
    return { at: new Date(0), command: "npm run load", seed: 1, seconds: 60, runtimes: 4, node: "v20", plan: { events: 100, trees: twos(TREE_KINDS), steps: twos(STEP_KINDS) }, chartFile: "load.svg", external, pipeline, passthrough };
  };
  // 100 events in each phase: CPU seconds become ms per event times 10.
  const services = (broker: number | null, minio: number, redis: number, registry: number): Pick<CpuSpent, "broker" | "others"> => ({ broker, others: { MinIO: minio, Redis: redis, "the schema registry": registry } });

  it("SYS-6 with the pipeline elsewhere: its process from its metrics, whole, plus each service's extra; records and objects per event beside it", () => {
    const pipe = phase(100, { machine: 0.9, process: 0.08, redis: null, ...services(0.14, 0.071, 0.025, 0.003), others: { [PIPELINE_ELSEWHERE]: 0.199, MinIO: 0.071, Redis: 0.025, "the schema registry": 0.003 } }, { records: 440, internal: 441, objects: 52 });
    const base = phase(100, { machine: 0.3, process: 0.09, redis: null, ...services(0.05, 0, 0.002, 0.001), others: { [PIPELINE_ELSEWHERE]: 0.001, MinIO: 0, Redis: 0.002, "the schema registry": 0.001 } }, { records: 200, internal: 20 });
    const c = causedCpu(pipe, base, true);
    expect(c?.total).toBeCloseTo(1.99 + 0.9 + 0.71 + 0.23 + 0.02, 10);
    const md = loadMarkdown(resultOf(true, pipe, base));
    expect(md).toContain("| caused by the pipeline | 3.85 | | |");
    expect(md).toContain("Caused by the pipeline, ms per event: 3.85 = the pipeline's process 1.99 + the broker's extra 0.90 + MinIO's extra 0.71 + Redis's extra 0.23 + the schema registry's extra 0.02.");
    expect(md).toContain("read from its `/metrics`, whole");
    expect(md).toContain("| records written to Kafka, beyond the event | 3.40 | 1.00 | 3.40x |");
    expect(md).toContain("| records Kafka wrote to its own topics (committed offsets, transaction state) | 4.41 | 0.20 | 22.05x |");
    expect(md).toContain("| objects the pipeline's process put to MinIO | 0.52 | | |");
    expect(md.indexOf("| caused by the pipeline |")).toBeGreaterThan(md.indexOf("| the whole machine"));
    expect(md.indexOf("| records written to Kafka")).toBeLessThan(md.indexOf("## Latency from ask to decision"));
  });

  it("SYS-6 in process: this process's CPU per event beyond the passthrough's phase, and says so; a service not read is unknown", () => {
    // Broker not on this machine: null in both phases.
    const pipe = phase(100, { machine: 0.9, process: 0.28, redis: null, ...services(null, 0.071, 0.025, 0.003) }, { records: null, internal: null, objects: null });
    const base = phase(100, { machine: 0.3, process: 0.09, redis: null, ...services(null, 0, 0.002, 0.001) }, { records: 200, internal: 30 });
    const md = loadMarkdown(resultOf(false, pipe, base));
    expect(md).toContain("| caused by the pipeline | at least 2.86 | | |");
    expect(md).toContain("at least 2.86 = this process's extra 1.90 + the broker's extra unknown + MinIO's extra 0.71 + Redis's extra 0.23 + the schema registry's extra 0.02 (unknown, as a reading is missing: the broker's extra;");
    expect(md).toContain("less that in the passthrough's phase (which takes off the runtimes' cost, and the passthrough's own)");
    expect(md).toContain("| records written to Kafka, beyond the event | unknown | 1.00 | - |");
    expect(md).toContain("| records Kafka wrote to its own topics (committed offsets, transaction state) | unknown | 0.30 | - |");
    expect(md).toContain("| objects the pipeline's process put to MinIO | unknown | | |");
  });

  it("SYS-6 leaves out the row of Kafka's own topics where neither phase counted them (a report of an older run)", () => {
    const spent: CpuSpent = { machine: 0.3, process: 0.09, redis: null, ...services(0.05, 0, 0.002, 0.001) };
    const md = loadMarkdown(resultOf(true, phase(100, spent, { records: 300 }), phase(100, spent, { records: 200 })));
    expect(md).toContain("| records written to Kafka, beyond the event | 2.00 | 1.00 | 2.00x |");
    expect(md).not.toContain("its own topics");
  });
});
