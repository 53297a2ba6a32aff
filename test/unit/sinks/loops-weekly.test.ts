import { describe, expect, it } from "vitest";
import type { KillSwitch } from "../../../config/kill-switch.ts";
import { parsePlugin } from "../../../config/plugin.ts";
import { weeklyLoopingTools } from "../../../processors/audit-sink/query.ts";
import { formatLoopReport, toolFacts, toolsLoopingAcrossTenants } from "../../../processors/loops/report.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import type { AuditEvent } from "../../../schemas/types.ts";

const NOW = Date.UTC(2026, 10, 30, 12);
const DAY = 86_400_000;
const SWITCH: KillSwitch = { plugin: "docs", tool: "search", reason: "it deletes pages when it loops", by: "ops-anna", at: Date.UTC(2026, 10, 29, 8) };

let n = 0;
function acted(tenant: string | null, plugin: string, tool: string, at: number, over: Partial<AuditEvent> = {}): AuditEvent {
  n += 1;
  return { id: `acted-${n}`, kind: "loop.acted", tenant, tree_id: "t", job_id: "j", actor: "loop-calls", reason: null, facts: { plugin, tool, detector: "repeat", action: "stop" }, numbers: {}, ts: at, ...over };
}

function table(): ReturnType<typeof staticConfig> {
  const manifest = parsePlugin("name: docs\ntools:\n  - id: search\n    mcp: https://docs.example/mcp\n    risk: destructive\n  - id: fetch\n    mcp: https://docs.example/mcp\n", "plugins/docs.yaml");
  if (!manifest.ok) throw new Error(manifest.errors.map((e) => e.message).join("\n"));
  return staticConfig([
    { kind: "plugin", id: "docs", value: manifest.value },
    { kind: "kill_switch", id: "docs/search", value: SWITCH },
  ]);
}

describe("audit reader: the weekly cross-tenant loop view", () => {
  it("LOOP-9 lists the tools that looped in three or more tenants in the last 7 days, from loop.acted entries, with risk class and kill switch", () => {
    const first = acted("a", "docs", "search", NOW - 1 * DAY);
    const entries = [
      first,
      first, // the same entry read twice counts once
      acted("a", "docs", "search", NOW),
      acted("b", "docs", "search", NOW - 6 * DAY),
      acted("c", "docs", "search", NOW - 3 * DAY),
      // fetch: three tenants, but c's loop is eight days old, outside the week.
      acted("a", "docs", "fetch", NOW),
      acted("b", "docs", "fetch", NOW),
      acted("c", "docs", "fetch", NOW - 8 * DAY),
      // web/get: three tenants in the week; its day is the one the entry gives.
      acted("a", "web", "get", NOW),
      acted("b", "web", "get", NOW),
      acted("c", "web", "get", NOW - 9 * DAY, { facts: { plugin: "web", tool: "get", day: "2026-11-28" } }),
      // Neither a loop.acted entry nor one naming a tenant counts.
      acted("d", "docs", "fetch", NOW, { kind: "approval.decided" }),
      acted(null, "docs", "fetch", NOW),
    ];
    const tools = weeklyLoopingTools(entries, { until: NOW }, toolFacts(table()));
    expect(tools.map((t) => ({ tool: `${t.plugin}/${t.tool}`, tenants: t.tenants, loops: t.loops, risk: t.risk, switch: t.kill_switch?.by ?? null }))).toEqual([
      { tool: "docs/search", tenants: ["a", "b", "c"], loops: 4, risk: "destructive", switch: "ops-anna" },
      { tool: "web/get", tenants: ["a", "b", "c"], loops: 3, risk: null, switch: null },
    ]);
    const text = formatLoopReport(tools, { days: 7, minTenants: 3 });
    expect(text).toContain("docs/search  3 tenants (a, b, c), 4 loops, risk destructive, kill switch: THROWN");
    expect(text).toContain("web/get  3 tenants (a, b, c), 3 loops, risk not declared, kill switch: off");
    expect(weeklyLoopingTools(entries, { until: NOW, minTenants: 4 })).toEqual([]);
  });

  it("LOOP-9 the audit log's view and the daily counts in Redis group the same counts alike", () => {
    const entries = [acted("a", "docs", "search", NOW), acted("a", "docs", "search", NOW), acted("b", "docs", "search", NOW), acted("c", "docs", "search", NOW - DAY), acted("a", "docs", "fetch", NOW)];
    const days: Array<Record<string, string>> = [{ "a|docs|search": "2", "b|docs|search": "1", "a|docs|fetch": "1" }, { "c|docs|search": "1" }];
    const facts = toolFacts(table());
    expect(weeklyLoopingTools(entries, { until: NOW }, facts)).toEqual(toolsLoopingAcrossTenants(days, 3, facts));
    expect(weeklyLoopingTools(entries, { until: NOW, minTenants: 1 }, facts)).toEqual(toolsLoopingAcrossTenants(days, 1, facts));
  });
});
