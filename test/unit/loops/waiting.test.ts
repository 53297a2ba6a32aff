import { beforeEach, describe, expect, it } from "vitest";
import { parseTenant } from "../../../config/tenant.ts";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { sweepDeadlines } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { flagsFromHash, type RunFlags } from "../../../processors/loops/store.ts";
import { approvalState, deadlineEntries, formatWaiting, listed, personAnswer, personProcessor, waitingOf, type WaitingApproval } from "../../../processors/loops/waiting.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import type { Decision, ToolCall } from "../../../schemas/types.ts";
import { toolCall, uid } from "../../support/events.ts";

const T0 = Date.UTC(2026, 11, 1, 12);
const MIN = 60_000;

describe("LOOP-5 what waits for a person, read from the loop state (oz0 approval list)", () => {
  let store: MemoryLoopStore;
  let calls: TestDriver<ToolCall, LoopEnv>;
  let answers: TestDriver<Decision, LoopEnv>;
  let run: string;

  beforeEach(() => {
    store = new MemoryLoopStore();
    const parsed = parseTenant("approvals:\n  deadline: 1h\n  escalation:\n    - {after: 15m, to: team-leads}\n    - {after: 45m, to: oncall}\n", "tenants/acme.yaml");
    if (!parsed.ok) throw new Error("tenant");
    const env: LoopEnv = { config: staticConfig([{ kind: "tenant", id: "acme", value: parsed.value }]), store };
    calls = new TestDriver(loopCallsProcessor, env);
    answers = new TestDriver(loopApprovalsProcessor, env);
    run = uid("run");
  });

  const flags = (): RunFlags => flagsFromHash(Object.fromEntries(store.flags.get(`acme/${run}`) ?? []));
  const waitingNow = (): WaitingApproval[] => deadlineEntries([...store.deadlines.values()]).flatMap((e) => waitingOf(e, flags()) ?? []);

  async function waitingLoop(): Promise<ToolCall[]> {
    const cs = [1, 2, 3].map((i) => toolCall({ run_id: run, job_id: "job-7f3a", arguments: '{"path":"a.md"}', ts: T0 + i }));
    await calls.pipe(cs, { key: run });
    return cs;
  }

  it("LOOP-5 a waiting loop shows its job, the held call, the evidence, when it was asked, its deadline and the ladder ahead", async () => {
    const cs = await waitingLoop();
    const [w] = waitingNow();
    expect(waitingNow()).toHaveLength(1);
    expect(w).toMatchObject({
      kind: "loop",
      tenant: "acme",
      job_id: "job-7f3a",
      run_id: run,
      call_id: cs[2]?.call_id,
      call: { plugin: "acme_docs", tool: "acme_docs", function: "get_page" },
      asked_at: T0 + 3,
      deadline: T0 + 3 + 60 * MIN,
      step: 0,
      escalated_to: null,
      next: [{ at: T0 + 3 + 15 * MIN, to: "team-leads" }, { at: T0 + 3 + 45 * MIN, to: "oncall" }],
      evidence: { detector: "repeats", count: 3, threshold: 3, arguments: { path: "a.md" } },
    });
    expect(approvalState(flags(), w?.approval ?? "")).toBe("waiting");
    const text = formatWaiting(waitingNow(), T0 + 10 * MIN);
    expect(text).toContain(`${w?.approval}  loop  job job-7f3a  tenant acme`);
    expect(text).toContain("repeats: acme_docs.acme_docs.get_page 3 times (threshold 3)");
    expect(text).toContain('arguments {"path":"a.md"}');
    expect(text).toContain("not escalated; next: team-leads in 5m");
    expect(text).toContain(`oz0 approval deny job-7f3a ${w?.approval} --comment`);
  });

  it("LOOP-5 after a step of the ladder passes, the approval is on that step, with whom it went to", async () => {
    await waitingLoop();
    const published: Decision[] = [];
    await sweepDeadlines(store, (a) => Promise.resolve(void published.push(...a)), T0 + 20 * MIN);
    await answers.pipe(published, { key: run });
    expect(waitingNow()[0]).toMatchObject({ step: 1, escalated_to: "team-leads", next: [{ to: "oncall" }] });
    expect(formatWaiting(waitingNow(), T0 + 20 * MIN)).toContain("escalation step 1, with team-leads; next: oncall in 25m");
  });

  it("LOOP-5 a person's answer is the Decision loop-approvals takes: the first wins, and the approval is no longer listed", async () => {
    await waitingLoop();
    const [w] = waitingNow();
    if (!w) throw new Error("nothing waits");
    const approve = personAnswer(w, { verdict: "allow", person: "alice", comment: "expected", now: T0 + MIN });
    expect(approve).toMatchObject({ processor: "person:alice", subject: w.approval, verdict: "allow", reason_code: null, run_id: run, job_id: "job-7f3a", message: "expected" });
    expect(personAnswer(w, { verdict: "allow", person: "alice", now: T0 + 2 * MIN }).id).toBe(approve.id);
    expect(personAnswer(w, { verdict: "stop", person: "alice", now: T0 }).id).not.toBe(approve.id);
    const { emits } = await answers.pipe(approve, { key: run });
    const allowed = emits.find((e) => e.to === "oz0.call-decisions")?.value as Decision;
    expect(allowed).toMatchObject({ verdict: "allow", reason_code: "LoopApproved" });
    expect(JSON.parse(allowed.evidence ?? "{}")).toEqual({ approval: { id: w.approval, kind: "loop" }, answered_by: "person:alice" });
    expect(approvalState(flags(), w.approval)).toBe("approved");
    expect(waitingNow()).toEqual([]);
    expect(approvalState(flags(), "other")).toBe("unknown");
  });

  it("LOOP-5 the list filters by tenant and kind and puts the soonest deadline first", () => {
    const w = (approval: string, tenant: string, deadline: number) => ({ approval, tenant, deadline, kind: "loop" }) as WaitingApproval;
    const all = [w("b", "acme", 20), w("a", "acme", 10), w("c", "globex", 5)];
    expect(listed(all, {}).map((x) => x.approval)).toEqual(["c", "a", "b"]);
    expect(listed(all, { tenant: "acme" }).map((x) => x.approval)).toEqual(["a", "b"]);
    expect(listed(all, { kind: "budget" })).toEqual([]);
    expect(formatWaiting([], 0)).toBe("nothing waits for a person\n");
  });

  it("LOOP-5 an answer names a person the audit can show; a name that could pass for something else is refused", () => {
    expect(personProcessor(" alice.smith@acme ")).toBe("person:alice.smith@acme");
    expect(() => personProcessor("")).toThrow(/not a name/);
    expect(() => personProcessor("loop-deadlines\nx")).toThrow(/not a name/);
    expect(() => personProcessor("a b")).toThrow(/not a name/);
  });
});
