import { describe, expect, it } from "vitest";
import { parseAgent } from "../../../config/agent.ts";
import { renderMetrics } from "../../../processors/ops/metrics.ts";
import { DEFAULT_EVERY_MS, describeSchedule, parseEvery, retentionScheduleFromEnv, traceRetentionDaysFromEnv } from "../../../processors/retention/schedule.ts";
import { formatStatus, type RetentionStatus, type SweepRecord } from "../../../processors/retention/status.ts";
import { AUDIT_REFS_MAX, auditEntry, RetentionMetrics, type TenantSweep } from "../../../processors/retention/sweep.ts";

const NOW = Date.UTC(2026, 3, 1, 12, 0, 0);
const ref = (n: number): string => `oz0-file:sha256:${n.toString(16).padStart(64, "0")}`;

function sweep(over: Partial<TenantSweep> = {}): TenantSweep {
  return {
    tenant: "acme",
    outcome: "swept",
    removed: { files: 1, grants: 2, traces: 3 },
    held: { files: 1, traces: 0 },
    refs: { filesRemoved: [ref(1)], filesHeld: [ref(2)], traceJobsRemoved: ["job-1"] },
    durationMs: 1234,
    errors: [],
    ...over,
  };
}

describe("retention schedule (FILE-6, OFF-10)", () => {
  it("OFF-10 OZ0_RETENTION_EVERY: an hour by default, a duration, or off; the first sweep soon after the start", () => {
    expect(retentionScheduleFromEnv({})).toEqual({ everyMs: DEFAULT_EVERY_MS, firstMs: 30_000 });
    expect(retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "15m" })).toEqual({ everyMs: 15 * 60_000, firstMs: 30_000 });
    expect(retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "10s" })).toEqual({ everyMs: 10_000, firstMs: 10_000 });
    expect(retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "2h", OZ0_RETENTION_FIRST: "5m" })).toEqual({ everyMs: 2 * 3_600_000, firstMs: 5 * 60_000 });
    expect(retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "off" })).toBe("off");
    expect(retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: " OFF " })).toBe("off");
    expect(parseEvery("  ")).toBe(DEFAULT_EVERY_MS);
    expect(describeSchedule({ everyMs: 3_600_000, firstMs: 30_000 })).toBe("every 1h, the first 30s after the start");
  });

  it("OFF-10 a wrong schedule is refused with the setting's name and what to write", () => {
    expect(() => retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "hourly" })).toThrow(/OZ0_RETENTION_EVERY=hourly: .*expected a duration.*or off/);
    expect(() => retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "60" })).toThrow(/OZ0_RETENTION_EVERY=60: .*no unit/);
    expect(() => retentionScheduleFromEnv({ OZ0_RETENTION_EVERY: "500ms" })).toThrow(/below 1s/);
    expect(() => retentionScheduleFromEnv({ OZ0_RETENTION_FIRST: "soon" })).toThrow(/OZ0_RETENTION_FIRST=soon/);
  });

  it("OFF-10 OZ0_TRACE_RETENTION_DAYS: 30 by default, 0 keeps traces, anything else refused", () => {
    expect(traceRetentionDaysFromEnv({})).toBe(30);
    expect(traceRetentionDaysFromEnv({ OZ0_TRACE_RETENTION_DAYS: "7" })).toBe(7);
    expect(traceRetentionDaysFromEnv({ OZ0_TRACE_RETENTION_DAYS: "0" })).toBe(0);
    expect(() => traceRetentionDaysFromEnv({ OZ0_TRACE_RETENTION_DAYS: "1.5" })).toThrow(/OZ0_TRACE_RETENTION_DAYS=1.5 is not a whole number of days/);
    expect(() => traceRetentionDaysFromEnv({ OZ0_TRACE_RETENTION_DAYS: "-1" })).toThrow(/from 0/);
  });

  it("FILE-6 an agent has no keep-for period: a definition that sets one is refused, so nothing an agent says lengthens a file's retention", () => {
    const parsed = parseAgent("name: keeper\nkeep_for: 365d\n", "agents/keeper.yaml");
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.map((e) => e.message).join("\n")).toMatch(/keep_for.*unknown key "keep_for"/);
  });
});

describe("retention status and records (FILE-6, OFF-10)", () => {
  const record: SweepRecord = { tenant: "acme", at: NOW - 90 * 60_000, instance: "pipe-1", outcome: "swept", removed: { files: 2, grants: 3, traces: 1 }, held: { files: 1, traces: 0 }, duration_ms: 1500, errors: [] };

  it("OFF-10 status says each tenant's last sweep (when, by whom, removed, held back) and what is due now", () => {
    const status: RetentionStatus = {
      now: NOW,
      retention: { files_days: 90, traces_days: 30 },
      tenants: [
        { tenant: "acme", last: record, due: { files: 0, grants: 0, traces: 0, held: { files: 1, traces: 0 } } },
        { tenant: "globex", last: null, due: { files: 4, grants: 5, traces: 1, held: { files: 0, traces: 2 } } },
        { tenant: "initech", last: { ...record, tenant: "initech", outcome: "failed", errors: ["traces: MinIO did not answer"] }, due: null, dueError: "MinIO did not answer" },
      ],
    };
    expect(formatStatus(status)).toBe(
      [
        "retention: files: 90 days after a tree last stored them; traces: 30 days after they were written",
        "tenant acme",
        "  last sweep: 2026-04-01T10:30:00.000Z (1h30m ago) by pipe-1, 1.5 s",
        "    removed 2 files, 3 grants, 1 trace part; held back 1 file, 0 trace parts",
        "  due now: nothing; held back 1 file, 0 trace parts",
        "tenant globex",
        "  last sweep: never",
        "  due now: 4 files, 5 grants, 1 trace part past retention; held back 0 files, 2 trace parts",
        "tenant initech",
        "  last sweep: 2026-04-01T10:30:00.000Z (1h30m ago) by pipe-1, 1.5 s, FAILED",
        "    removed 2 files, 3 grants, 1 trace part; held back 1 file, 0 trace parts",
        "    error: traces: MinIO did not answer",
        "  due now: unknown (MinIO did not answer)",
        "",
      ].join("\n"),
    );
    expect(formatStatus({ now: NOW, retention: { files_days: 90, traces_days: 0 }, tenants: [] })).toMatch(/traces: kept \(OZ0_TRACE_RETENTION_DAYS=0\)\nno tenant has stored files or traces/);
  });

  it("OFF-10 the audit entry of a tenant's sweep: counts and refs, never content; none when nothing was removed or held", () => {
    const e = auditEntry(sweep(), { instance: "pipe-1", now: NOW });
    expect(e).toMatchObject({
      kind: "retention.swept",
      tenant: "acme",
      actor: "retention",
      facts: { instance: "pipe-1", files_removed: ref(1), files_held: ref(2), trace_jobs_removed: "job-1", outcome: "swept" },
      numbers: { files_removed: 1, grants_removed: 2, trace_parts_removed: 3, files_held: 1, trace_parts_held: 0, duration_ms: 1234 },
      ts: NOW,
    });
    expect(auditEntry(sweep(), { instance: "pipe-2", now: NOW })?.id).toBe(e?.id);
    expect(auditEntry(sweep({ removed: { files: 0, grants: 0, traces: 0 }, held: { files: 0, traces: 0 }, refs: { filesRemoved: [], filesHeld: [], traceJobsRemoved: [] } }), { instance: "pipe-1", now: NOW })).toBeNull();
    expect(auditEntry(sweep({ outcome: "locked" }), { instance: "pipe-1", now: NOW })).toBeNull();
    const many = Array.from({ length: AUDIT_REFS_MAX + 5 }, (_, i) => ref(i));
    const big = auditEntry(sweep({ removed: { files: many.length, grants: 0, traces: 0 }, refs: { filesRemoved: many, filesHeld: [], traceJobsRemoved: [] } }), { instance: "pipe-1", now: NOW });
    expect(big?.facts.files_removed?.split(" ")).toHaveLength(AUDIT_REFS_MAX);
    expect(big?.facts.refs_truncated).toMatch(/numbers are whole/);
    expect(big?.numbers.files_removed).toBe(AUDIT_REFS_MAX + 5);
  });

  it("OFF-10 the metrics count removed and held objects by kind, sweeps by outcome, and the last round", async () => {
    const m = new RetentionMetrics();
    expect(await renderMetrics(m.families())).toContain("oz0_retention_last_sweep_timestamp_seconds 0");
    m.count(sweep());
    m.count(sweep({ outcome: "locked", removed: { files: 0, grants: 0, traces: 0 }, held: { files: 0, traces: 0 } }));
    m.count(sweep({ removed: { files: 0, grants: 1, traces: 0 }, held: { files: 0, traces: 4 } }));
    m.roundDone(NOW);
    const text = await renderMetrics(m.families());
    expect(text).toContain('oz0_retention_removed_total{kind="file"} 1');
    expect(text).toContain('oz0_retention_removed_total{kind="grant"} 3');
    expect(text).toContain('oz0_retention_removed_total{kind="trace"} 3');
    expect(text).toContain('oz0_retention_held_total{kind="file"} 1');
    expect(text).toContain('oz0_retention_held_total{kind="trace"} 4');
    expect(text).toContain('oz0_retention_sweeps_total{outcome="swept"} 2');
    expect(text).toContain('oz0_retention_sweeps_total{outcome="locked"} 1');
    expect(text).toContain(`oz0_retention_last_sweep_timestamp_seconds ${NOW / 1000}`);
  });
});
