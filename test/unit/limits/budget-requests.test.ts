import { describe, expect, it } from "vitest";
import { answerProblem, budgetAnswerDecision, budgetRequestOf, formatBudgetRequests, isBudgetApproval, type BudgetRequest } from "../../../processors/limits/budget-requests.ts";
import { limitsTreeKey } from "../../../processors/limits/memory-store.ts";
import type { Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { agent, jobEvent, modelCall, setup, tenantSettings } from "./support.ts";

describe("LIM-7 LIM-8 LIM-10 budget requests: waits for a person about spending", () => {
  // sonnet: $0.018 worst case an ask; a $0.01 budget, strict, waits at the first ask when a person started the tree.
  const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 0.01, reserve: "strict" } });

  it("LIM-7 a tree's budget wait is kept as a budget request named in the decision's evidence, once, and a replay names the same", async () => {
    const { calls, jobs, store } = setup([boss], tenantSettings());
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree, { started_by: "person", principal: "pat" }));
    const ask = modelCall(tree);
    await calls.pipe([ask, ask], { key: tree });
    const [first, again] = calls.read<Decision>("oz0.admissions");
    expect(first).toMatchObject({ verdict: "wait", reason_code: "BudgetExceeded" });
    const approval = (JSON.parse(first?.evidence ?? "null") as { approval: { id: string; kind: string } }).approval;
    expect(approval.kind).toBe("budget");
    expect(isBudgetApproval(approval.id)).toBe(true);
    expect(again?.evidence).toBe(first?.evidence);
    const waiting = await store.budgetRequests();
    expect(waiting.map((r) => [r.approval, r.subject, r.job_id, r.limit])).toEqual([[approval.id, ask.request_id, tree, "limits.max_cost_usd"]]);
  });

  it("LIM-7 approving with a larger budget raises the tree's (never lowers it), once; the job's next ask goes ahead; the request waits no more", async () => {
    const { calls, jobs, store } = setup([boss], tenantSettings());
    const tree = uid("tree");
    await jobs.pipe(jobEvent(tree, { started_by: "person" }));
    await calls.pipe(modelCall(tree), { key: tree });
    const [r] = await store.budgetRequests();
    const request = r as BudgetRequest;
    const found = await store.budgetRequest(request.approval);
    expect(found?.treeBudget).toBe(10_000);
    const answer = { answer: "approved" as const, by: "person:pat", budget: 1_000_000, at: 5 };
    expect(await store.answerBudgetRequest(request, answer)).toEqual(answer);
    expect(await store.answerBudgetRequest(request, { ...answer, answer: "denied", at: 6 })).toEqual(answer);
    expect(store.trees.get(limitsTreeKey("acme", tree))?.settings.budget).toBe(1_000_000);
    expect(await store.budgetRequests()).toEqual([]);
    await calls.pipe(modelCall(tree), { key: tree });
    expect(calls.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");
  });

  it("LIM-7 LIM-10 an answer is held to what the wait is about: a budget above the tree's for its budget, none for a quota, none with a deny", () => {
    const base: BudgetRequest = { approval: "b-1", kind: "budget", tenant: "acme", tree_id: "t", job_id: "j", run_id: "r", subject: "req", reason_code: "BudgetExceeded", limit: "limits.max_cost_usd", message: "m", numbers: {}, decision_id: "d", asked_at: 0 };
    expect(answerProblem(base, "allow", null, 10_000)).toMatch(/--budget USD, above its \$0\.01/);
    expect(answerProblem(base, "allow", 10_000, 10_000)).toMatch(/not above/);
    expect(answerProblem(base, "allow", 20_000, 10_000)).toBeNull();
    expect(answerProblem(base, "stop", 20_000, 10_000)).toMatch(/goes with approve/);
    expect(answerProblem(base, "stop", null, 10_000)).toBeNull();
    const quota = { ...base, reason_code: "quota_exceeded", limit: "quotas.person" };
    expect(answerProblem(quota, "allow", 20_000, 10_000)).toMatch(/oz0 quota set/);
    expect(answerProblem(quota, "allow", null, 10_000)).toBeNull();
    expect(answerProblem({ ...base, reason_code: "budget_forecast" }, "allow", null, 10_000)).toBeNull();
  });

  it("LIM-7 the answer tells the job as the wait was addressed, by the person, and the list says how to answer", () => {
    const wait: Decision = { id: "dec-1", input_id: "in", processor: "limits-jobs", tenant: "acme", tree_id: "t", job_id: "parent", run_id: "r", subject: "child-1", verdict: "wait", reason_code: "quota_exceeded", limit: "quotas.person", numbers: {}, message: "The child job is not started", evidence: null, ts: 1_000 };
    const r = budgetRequestOf(wait) as BudgetRequest;
    expect(budgetRequestOf({ ...wait, verdict: "stop" })).toBeNull();
    expect(budgetRequestOf({ ...wait, reason_code: "LoopDetected" })).toBeNull();
    const yes = budgetAnswerDecision(r, { verdict: "allow", person: "pat", comment: "month end", budget: null, now: 2_000 });
    expect(yes).toMatchObject({ processor: "person:pat", job_id: "parent", subject: "child-1", verdict: "allow", reason_code: "BudgetApproved", input_id: "dec-1" });
    expect(yes.message).toMatch(/approved the budget request .*: month end\. Ask again/);
    const no = budgetAnswerDecision(r, { verdict: "stop", person: "pat", budget: null, now: 2_000 });
    expect(no).toMatchObject({ verdict: "stop", reason_code: "BudgetExceeded" });
    expect(formatBudgetRequests([r], 61_000)).toMatch(new RegExp(`${r.approval}  budget  tenant acme  job parent  quota_exceeded \\(quotas.person\\)  waiting 60s[\\s\\S]*oz0 approval approve parent ${r.approval}  \\|`));
  });
});
