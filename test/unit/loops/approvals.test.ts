import { beforeEach, describe, expect, it } from "vitest";
import type { Decision, ResultDelivered, ToolCall } from "../../../schemas/types.ts";
import { loopApprovalsProcessor } from "../../../processors/loops/approvals-processor.ts";
import { loopCallsProcessor, type LoopEnv } from "../../../processors/loops/calls-processor.ts";
import { LOOP_DEADLINES, sweepDeadlines } from "../../../processors/loops/deadlines.ts";
import { MemoryLoopStore } from "../../../processors/loops/memory-store.ts";
import { toolsLoopingAcrossTenants } from "../../../processors/loops/report.ts";
import { staticConfig } from "../../../processors/runner/config-table.ts";
import { TestDriver } from "../../../processors/runner/test-driver.ts";
import { toolCall, uid } from "../../support/events.ts";

const T0 = Date.UTC(2026, 10, 30, 12);
let store: MemoryLoopStore;
let calls: TestDriver<ToolCall, LoopEnv>;
let answers: TestDriver<Decision, LoopEnv>;
let run: string;

beforeEach(() => {
  store = new MemoryLoopStore();
  const env: LoopEnv = { config: staticConfig([{ kind: "tenant", id: "acme", value: { loop_deadline: 600_000, loops: {} } }]), store };
  calls = new TestDriver(loopCallsProcessor, env);
  answers = new TestDriver(loopApprovalsProcessor, env);
  run = uid("run");
});

const read = (path = "a.md") => toolCall({ run_id: run, arguments: JSON.stringify({ path }), ts: T0 });

async function decide(...cs: ToolCall[]): Promise<Decision[]> {
  const { emits } = await calls.pipe(cs, { key: run });
  return emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision);
}

/** Loops the run until its third call waits; returns the wait decision and its approval. */
async function waitingLoop(): Promise<{ wait: Decision; approval: string }> {
  const ds = await decide(read(), read(), read());
  const wait = ds[2] as Decision;
  expect(wait.verdict).toBe("wait");
  return { wait, approval: (JSON.parse(wait.evidence ?? "null") as { approval: { id: string } }).approval.id };
}

function answer(approval: string, verdict: "allow" | "stop", over: Partial<Decision> = {}): Decision {
  return { id: uid("ans"), input_id: approval, processor: "person", tenant: "acme", tree_id: "job-root", job_id: "job-root", run_id: run, subject: approval, verdict, reason_code: null, limit: null, numbers: {}, message: "", evidence: null, ts: T0 + 1000, ...over };
}

async function answerWith(a: Decision): Promise<Decision[]> {
  const { emits } = await answers.pipe(a, { key: run });
  return emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision);
}

describe("LOOP-5 a loop waits as an approval of kind loop", () => {
  it("LOOP-5 a loop's approval is a-... (told from t-, b-, u-) and never begins with -, which oz0 approval would read as an option", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 200; i++) {
      run = uid("run");
      ids.push((await waitingLoop()).approval);
    }
    expect(new Set(ids).size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^a-[A-Za-z0-9_-]{22}$/);
  });

  it("LOOP-5 approve: the held call is allowed, the counters start again, and the deadline is dropped", async () => {
    const { wait, approval } = await waitingLoop();
    const [allowed] = await answerWith(answer(approval, "allow"));
    expect(allowed).toMatchObject({ verdict: "allow", subject: wait.subject, reason_code: "LoopApproved", processor: "loop-approvals" });
    expect(store.deadlines.size).toBe(0);
    expect((await decide(read(), read(), read())).map((d) => d.verdict)).toEqual(["allow", "allow", "wait"]);
  });

  it("LOOP-5 deny: the job stops with LoopDetected, the comment in the words, and every later call is stopped", async () => {
    const { wait, approval } = await waitingLoop();
    const [stopped] = await answerWith(answer(approval, "stop", { message: "it spins on the same page" }));
    expect(stopped).toMatchObject({ verdict: "stop", reason_code: "LoopDetected", subject: wait.subject });
    expect(stopped?.message).toMatch(/denied the loop .*it spins on the same page/);
    const later = await decide(read("other.md"));
    expect(later[0]).toMatchObject({ verdict: "stop", message: stopped?.message });
  });

  it("LOOP-5 calls that came while the loop waited are decided with it: stopped with their failed results on a deny, made on an approval", async () => {
    for (const verdict of ["stop", "allow"] as const) {
      run = uid("run");
      const { approval } = await waitingLoop();
      const behind = [read("b.md"), read("c.md")];
      expect((await decide(...behind)).map((d) => d.verdict)).toEqual(["wait", "wait"]);
      const { emits } = await answers.pipe(answer(approval, verdict), { key: run });
      const ds = emits.filter((e) => e.to === "oz0.call-decisions").map((e) => e.value as Decision);
      const results = emits.filter((e) => e.to === "oz0.results-delivered").map((e) => e.value as ResultDelivered);
      expect(ds.map((d) => [d.subject, d.verdict])).toEqual([
        [expect.any(String), verdict],
        [behind[0]?.call_id, verdict],
        [behind[1]?.call_id, verdict],
      ]);
      expect(new Set(ds.map((d) => d.id)).size).toBe(3);
      if (verdict === "stop") {
        // The held call's result and each call behind it, awaited by its event ID, with the same words.
        expect(results.map((r) => r.input_id).slice(1)).toEqual(behind.map((c) => c.id));
        expect(results.every((r) => r.is_error && (JSON.parse(r.content) as { content: Array<{ text: string }> }).content[0]?.text === ds[0]?.message)).toBe(true);
      } else {
        expect(results).toEqual([]);
        expect(ds[1]?.message).toMatch(/approved the loop this call waited behind/);
      }
    }
  });

  it("LOOP-5 a call behind the loop that is handed in again (a replay) is kept once", async () => {
    const { approval } = await waitingLoop();
    const late = read("b.md");
    await decide(late);
    await decide(late);
    expect(store.flags.get(`acme/${run}`)?.get(`behind:${approval}:${late.id}`)).toContain(late.call_id);
    const ds = await answerWith(answer(approval, "stop"));
    expect(ds.filter((d) => d.subject === late.call_id)).toHaveLength(1);
  });

  it("LOOP-5 nobody deciding by the tenant's deadline stops the job, by the timer, with no other event of the run", async () => {
    const { approval } = await waitingLoop();
    const published: Decision[] = [];
    const publish = (a: Decision[]) => Promise.resolve(void published.push(...a));
    expect(await sweepDeadlines(store, publish, T0 + 599_999)).toBe(0);
    expect(await sweepDeadlines(store, publish, T0 + 600_000)).toBe(1);
    expect(published).toEqual([expect.objectContaining({ processor: LOOP_DEADLINES, subject: approval, verdict: "stop", run_id: run })]);
    expect(await sweepDeadlines(store, publish, T0 + 700_000)).toBe(0);
    const [stopped] = await answerWith(published[0] as Decision);
    expect(stopped).toMatchObject({ verdict: "stop", reason_code: "LoopDetected" });
    expect(stopped?.message).toMatch(/Nobody decided on the loop .* by 2026-11-30T12:10:00.000Z/);
  });

  it("LOOP-5 the first answer wins: a late approval after the deadline, or a second answer, changes nothing", async () => {
    const { approval } = await waitingLoop();
    expect(await answerWith(answer(approval, "stop", { processor: LOOP_DEADLINES }))).toHaveLength(1);
    expect(await answerWith(answer(approval, "allow"))).toEqual([]);
    expect((await decide(read("x.md")))[0]?.verdict).toBe("stop");
  });

  it("LOOP-5 an answer to an approval the run never waited on goes to the dead letters", async () => {
    await answerWith(answer("no-such-approval", "allow"));
    expect(answers.deadLetters.map((d) => d.reason)).toEqual([expect.stringMatching(/no loop of run .* waits on approval no-such-approval/)]);
  });
});

describe("LOOP-9 loops acted on are counted", () => {
  it("LOOP-9 each loop acted on counts once per day, tenant, plugin and tool", async () => {
    await waitingLoop();
    expect([...store.counts]).toEqual([["2026-11-30|acme|acme_docs|acme_docs", 1]]);
  });

  it("LOOP-9 a tool that loops in three or more tenants in the week is listed, with its loops; two tenants are not enough", () => {
    const days: Array<Record<string, string>> = [
      { "a|docs|search": "2", "b|docs|search": "1", "a|web|fetch": "5" },
      { "c|docs|search": "1", "b|web|fetch": "1" },
    ];
    expect(toolsLoopingAcrossTenants(days, 3, { risk: (p) => (p === "docs" ? "read_only" : null) })).toEqual([{ plugin: "docs", tool: "search", tenants: ["a", "b", "c"], loops: 4, risk: "read_only", kill_switch: null }]);
    expect(toolsLoopingAcrossTenants(days, 2).map((t) => `${t.plugin}/${t.tool}`)).toEqual(["docs/search", "web/fetch"]);
  });
});
