import { describe, expect, it } from "vitest";
import { deadLetterRows, formatDoctor, healthy, rateOf, type DoctorReport } from "../../processors/ops/doctor.ts";

const HOUR = 3_600_000;
const AT = Date.UTC(2026, 11, 1, 13);

const report = (over: Partial<DoctorReport> = {}): DoctorReport => ({
  at: AT,
  since: AT - HOUR,
  services: [
    { name: "kafka", ok: true, ms: 12 },
    { name: "redis", ok: true, ms: 3 },
  ],
  processors: [{ name: "loop-calls", group: "oz0.pipeline", topic: "oz0.tool-calls.requested", lag: 4, rate: 12.5 }],
  dead_letters: [],
  looping: { days: 7, min_tenants: 3, tools: [{ plugin: "docs", tool: "fetch", tenants: ["a", "b", "c"], loops: 9, risk: "read", kill_switch: null }] },
  ...over,
});

describe("oz0 doctor's report (LOOP-9, dead letters, lag)", () => {
  it("counts dead letters by processor and error class, the most first, each with its newest reason", () => {
    const rows = deadLetterRows([
      { processor: "fit-results", error: "invalid", reason: "tenant is empty", ts: AT - 30 },
      { processor: "loop-calls", error: "undecodable", reason: "not Avro", ts: AT - 20 },
      { processor: "fit-results", error: "invalid", reason: "budget is negative", ts: AT - 10 },
      { processor: "fit-results", error: "undecodable", reason: "cut", ts: AT - 5 },
    ]);
    expect(rows).toEqual([
      { processor: "fit-results", error: "invalid", count: 2, reason: "budget is negative", last_at: AT - 10 },
      { processor: "fit-results", error: "undecodable", count: 1, reason: "cut", last_at: AT - 5 },
      { processor: "loop-calls", error: "undecodable", count: 1, reason: "not Avro", last_at: AT - 20 },
    ]);
  });

  it("a rate needs both readings; a group that went back (its offsets reset) counts none", () => {
    expect(rateOf(100, 160, 2)).toBe(30);
    expect(rateOf(null, 160, 2)).toBeNull();
    expect(rateOf(100, 90, 2)).toBe(0);
    expect(rateOf(100, 160, 0)).toBeNull();
  });

  it("LOOP-9 says which services do not answer, each processor's lag and rate, the dead letters and the looping tools with their kill switch", () => {
    const ok = formatDoctor(report());
    expect(healthy(report())).toBe(true);
    expect(ok).toContain("services: all answer (kafka 12 ms, redis 3 ms)");
    expect(ok).toMatch(/loop-calls +lag +4 +12\.5\/s +oz0\.pipeline on oz0\.tool-calls\.requested/);
    expect(ok).toContain("(1 h): none");
    expect(ok).toContain("docs/fetch  3 tenants (a, b, c), 9 loops, risk read, kill switch: off");

    const bad = report({
      services: [
        { name: "kafka", ok: true, ms: 12 },
        { name: "redis", ok: false, ms: 3000, error: "connect ECONNREFUSED 127.0.0.1:1" },
      ],
      processors: [{ name: "loop-calls", group: "oz0.pipeline", topic: "oz0.tool-calls.requested", lag: null, rate: null }],
      dead_letters: [{ processor: "fit-results", error: "invalid", count: 2, reason: "tenant is empty", last_at: AT - 10 }],
      looping: null,
    });
    expect(healthy(bad)).toBe(false);
    const text = formatDoctor(bad);
    expect(text).toContain("services: 1 of 2 do not answer");
    expect(text).toContain("redis: does not answer: connect ECONNREFUSED 127.0.0.1:1");
    expect(text).toMatch(/loop-calls +lag +\? +\?\/s/);
    expect(text).toContain("(1 h): 2");
    expect(text).toContain("fit-results  invalid  2  newest 2026-12-01T12:59:59.990Z: tenant is empty");
    expect(text).toContain("looping tools: not read (Redis does not answer)");
  });
});
