import { beforeEach, describe, expect, it } from "vitest";
import { killSwitchAudit, killSwitchKey, killSwitchRecord, parseToolName, type KillSwitch } from "../../../config/kill-switch.ts";
import { parsePlugin } from "../../../config/plugin.ts";
import { describeKillSwitch } from "../../../processors/loops/kill-switch.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { formatLoopReport, toolFacts, toolsLoopingAcrossTenants } from "../../../processors/loops/report.ts";
import { loopResultsProcessor } from "../../../processors/loops/results-processor.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import { schemaViolations } from "../../../schemas/catalog.ts";
import type { AuditEvent, Decision, ResultDelivered, ToolCall, ToolResult } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";
import { EMPTY_RESULT, toolResult } from "../../support/loop-events.ts";

const T0 = Date.UTC(2026, 10, 30, 12);
const SWITCH: KillSwitch = { plugin: "acme_docs", tool: "acme_docs", reason: "it deletes pages when it loops", by: "ops-anna", at: Date.UTC(2026, 10, 29, 8) };

let config: ReturnType<typeof staticConfig>;
let calls: TestDriver<ToolCall, LoopEnv>;
let run: string;

beforeEach(() => {
  config = staticConfig([{ kind: "agent", id: "reporter", value: { on_loop: "report" } }]);
  calls = new TestDriver(loopCallsProcessor, { config, store: new MemoryLoopStore() });
  run = uid("run");
});

const call = (over: Partial<ToolCall> = {}) => toolCall({ run_id: run, ts: T0, ...over });

describe("LOOP-9 the kill switch", () => {
  it("LOOP-9 a thrown switch refuses every call of the tool, in every tenant and of every origin, with words naming the switch and its reason", async () => {
    config.set("kill_switch", "acme_docs/acme_docs", SWITCH);
    const cs = [call({ tenant: "acme" }), call({ tenant: "globex", origin: "harness" }), call({ tenant: "initech", origin: "person" }), call({ tool: "other_tool" })];
    const { emits } = await calls.pipe(cs, { key: run });
    const decisions = emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision);
    expect(decisions.map((d) => `${d.verdict}:${d.reason_code ?? ""}`)).toEqual(["refuse:KillSwitch", "refuse:KillSwitch", "refuse:KillSwitch", "allow:"]);
    expect(decisions[0]?.message).toBe(
      "The tool acme_docs/acme_docs is switched off in every tenant by a kill switch (thrown 2026-11-29T08:00:00.000Z by ops-anna): it deletes pages when it loops. The call was not made; use another tool or answer with what you have.",
    );
    expect(JSON.parse(decisions[0]?.evidence ?? "null")).toEqual({ kill_switch: { tool: "acme_docs/acme_docs", reason: SWITCH.reason, by: "ops-anna", thrown_at: "2026-11-29T08:00:00.000Z" } });
    // The model reads the same words as the call's failed result.
    const results = emits.filter((e) => e.to === "oz0.results-delivered").map((e) => e.value as ResultDelivered);
    expect(results.map((r) => r.call_id)).toEqual(cs.slice(0, 3).map((c) => c.call_id));
    expect(JSON.parse(results[0]?.content ?? "null")).toEqual({ content: [{ type: "text", text: decisions[0]?.message }], isError: true });
  });

  it("LOOP-9 refused calls do not count towards a loop, and a released switch lets the tool's calls go again", async () => {
    config.set("kill_switch", "acme_docs/acme_docs", SWITCH);
    await calls.pipe([call(), call(), call()], { key: run });
    config.set("kill_switch", "acme_docs/acme_docs", undefined);
    const { emits } = await calls.pipe([call(), call()], { key: run });
    expect(emits.map((e) => (e.value as Decision).verdict)).toEqual(["allow", "allow"]);
  });

  it("LOOP-9 names a tool as <plugin>/<tool>, and never switches off the platform's own answer", () => {
    expect(parseToolName("acme_docs/search")).toEqual({ plugin: "acme_docs", tool: "search" });
    expect(parseToolName("acme_docs")).toEqual({ error: expect.stringMatching(/is not <plugin>\/<tool>/) as string });
    expect(parseToolName("acme docs/x")).toEqual({ error: expect.stringMatching(/"acme docs" is not a valid plugin name/) as string });
    expect(parseToolName("oz0/answer")).toEqual({ error: expect.stringMatching(/cannot be switched off/) as string });
  });

  it("LOOP-9 the switch is a kill_switch row of the configuration table, and throwing and releasing it are audit entries with the reason", () => {
    const row = killSwitchRecord(SWITCH);
    expect(row).toEqual({ kind: "kill_switch", id: "acme_docs/acme_docs", value: JSON.stringify(SWITCH), source: "", reason: SWITCH.reason, ts: SWITCH.at });
    expect(schemaViolations("ConfigRecord", row)).toEqual([]);
    expect(killSwitchKey("acme_docs", "acme_docs")).toBe("kill_switch/acme_docs/acme_docs");

    const thrown = killSwitchAudit("thrown", SWITCH);
    const released = killSwitchAudit("released", { ...SWITCH, reason: "fixed in 2.3", at: SWITCH.at + 3_600_000, thrownAt: SWITCH.at });
    expect(thrown).toMatchObject({ kind: "kill_switch.thrown", tenant: null, actor: "ops-anna", reason: SWITCH.reason, facts: { plugin: "acme_docs", tool: "acme_docs" } });
    expect(released).toMatchObject({ kind: "kill_switch.released", reason: "fixed in 2.3", numbers: { thrown_at: SWITCH.at } });
    expect(schemaViolations("AuditEvent", thrown)).toEqual([]);
    expect(thrown.id).toBe(killSwitchAudit("thrown", SWITCH).id);
    expect(thrown.id).not.toBe(released.id);
    expect(describeKillSwitch({ changed: "thrown", sw: SWITCH })).toMatch(/^thrown +kill switch on acme_docs\/acme_docs/);
    expect(describeKillSwitch({ changed: "none", why: "no kill switch is thrown on a/b" })).toBe("nothing changed: no kill switch is thrown on a/b");
  });

  it("LOOP-9 the report shows each tool's risk class from its manifest and whether its switch is thrown", () => {
    const manifest = parsePlugin("name: docs\ntools:\n  - id: search\n    mcp: https://docs.example/mcp\n    risk: destructive\n  - id: fetch\n    mcp: https://docs.example/mcp\n", "plugins/docs.yaml");
    if (!manifest.ok) throw new Error(manifest.errors.map((e) => e.message).join("\n"));
    expect(manifest.value.tools.map((t) => t.risk)).toEqual(["destructive", undefined]);
    const table = staticConfig([
      { kind: "plugin", id: "docs", value: manifest.value },
      { kind: "kill_switch", id: "docs/search", value: { ...SWITCH, plugin: "docs", tool: "search" } },
    ]);
    const days = [{ "a|docs|search": "2", "b|docs|search": "1", "c|docs|search": "1", "a|docs|fetch": "1", "b|docs|fetch": "1", "c|docs|fetch": "1" }];
    const tools = toolsLoopingAcrossTenants(days, 3, toolFacts(table));
    expect(tools.map((t) => [t.tool, t.risk, t.kill_switch?.reason ?? null])).toEqual([
      ["search", "destructive", SWITCH.reason],
      ["fetch", null, null],
    ]);
    const text = formatLoopReport(tools, { days: 7, minTenants: 3 });
    expect(text).toContain("docs/search  3 tenants (a, b, c), 4 loops, risk destructive, kill switch: THROWN 2026-11-29T08:00:00.000Z by ops-anna: it deletes pages when it loops");
    expect(text).toContain('docs/fetch  3 tenants (a, b, c), 3 loops, risk not declared, kill switch: off (oz0 config kill-switch docs/fetch --reason "...")');
    expect(formatLoopReport([], { days: 7, minTenants: 3 })).toBe("Tools that looped in 3 or more tenants in the last 7 days: none.");
  });

  it("LOOP-9 a risk class in a manifest is a name", () => {
    const bad = parsePlugin("name: docs\ntools:\n  - id: search\n    mcp: https://docs.example/mcp\n    risk: very bad\n", "plugins/docs.yaml");
    expect(bad.ok ? [] : bad.errors.map((e) => e.message)).toEqual([expect.stringMatching(/tools\[0\]\.risk: "very bad" is not a valid name/)]);
  });
});

describe("LOOP-9 each loop acted on goes to the audit log", () => {
  it("LOOP-9 a loop acted on emits loop.acted with tenant, plugin, tool, detector and day; never arguments or content", async () => {
    const secret = { path: "salaries-2026.xlsx" };
    const { emits } = await calls.pipe([1, 2, 3].map(() => call({ agent: "reporter", arguments: JSON.stringify(secret) })), { key: run });
    const audit = emits.filter((e) => e.to === "oz0.audit");
    expect(audit).toHaveLength(1);
    expect(audit[0]?.key).toBe("acme");
    expect(audit[0]?.value).toMatchObject({ kind: "loop.acted", tenant: "acme", actor: "loop-calls", facts: { plugin: "acme_docs", tool: "acme_docs", detector: "repeats", day: "2026-11-30", action: "report" } });
    expect(JSON.stringify(audit[0]?.value)).not.toContain("salaries");

    const results = new TestDriver(loopResultsProcessor, { config, store: new MemoryLoopStore() });
    const c = call({ function: "search", arguments: '{"q":"secret words"}' });
    const out = await results.pipe(Array.from({ length: 5 }, (): ToolResult => toolResult(c, { id: uid("evt"), content: EMPTY_RESULT })), { key: run });
    const acted = out.emits.filter((e) => e.to === "oz0.audit").map((e) => e.value as AuditEvent);
    expect(acted).toEqual([expect.objectContaining({ kind: "loop.acted", actor: "loop-results", facts: { plugin: "acme_docs", tool: "acme_docs", detector: "no_progress", day: "2026-11-30", action: "finish_only" } })]);
    expect(JSON.stringify(acted)).not.toContain("secret words");
  });

  it("LOOP-9 a call allowed, or a call refused after the loop, writes no audit entry", async () => {
    const { emits } = await calls.pipe([call({ arguments: '{"p":1}' }), call({ arguments: '{"p":2}' })], { key: run });
    expect(emits.filter((e) => e.to === "oz0.audit")).toEqual([]);
  });
});
