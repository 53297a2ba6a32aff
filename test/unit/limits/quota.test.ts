import { describe, expect, it } from "vitest";
import { quotaOf } from "../../../config/quotas.ts";
import { tenantChange } from "../../../config/tenant-change.ts";
import { parseTenant } from "../../../config/tenant.ts";
import { limitsTreeKey } from "../../../processors/limits/memory-store.ts";
import { newQuotaMonth, quotaAsk, quotaCheck, quotaRelease, quotaSettle } from "../../../processors/limits/quota.ts";
import type { Decision } from "../../../schemas/types.ts";
import { uid } from "../../support/events.ts";
import { errorsOf, expectError, valueOf } from "../config/helpers.ts";
import { agent, jobEvent, modelCall, setup, tenantSettings, usageOf } from "./support.ts";

const PATH = "tenants/acme.yaml";
const times = { now: 1_000, holdMs: 60_000, keepMs: 600_000 };
const NONE = -1;

describe("LIM-10 monthly quotas in the tenant's settings", () => {
  it("LIM-10 reads quotas per person and team, with each one's own over the default, in dollars written bare or with $", () => {
    const t = valueOf(parseTenant('quotas:\n  person: "$50"\n  team: 500\n  per_person: {"alice@acme.com": 80}\n  per_team: {research: "$2000"}\n', PATH));
    expect(t.quotas).toEqual({ person: 50, team: 500, per_person: { "alice@acme.com": 80 }, per_team: { research: 2_000 } });
    expect(quotaOf(t.quotas, "person", "alice@acme.com", "2026-12")).toEqual({ usd: 80, setting: "quotas.per_person.alice@acme.com" });
    expect(quotaOf(t.quotas, "person", "bob", "2026-12")).toEqual({ usd: 50, setting: "quotas.person" });
    expect(quotaOf(t.quotas, "team", "research", "2026-12")).toEqual({ usd: 2_000, setting: "quotas.per_team.research" });
    expect(quotaOf(t.quotas, "team", "", "2026-12")).toBeNull();
    expect(valueOf(parseTenant("quotas: {person: none, per_team: {ops: 10}}\n", PATH)).quotas).toEqual({ per_team: { ops: 10 } });
    expect(quotaOf(valueOf(parseTenant("id: acme\n", PATH)).quotas, "person", "bob", "2026-12")).toBeNull();
  });

  it("LIM-10 a quota for one month (quotas.per_month) wins in that month only; a month not written YYYY-MM is refused with the line", () => {
    const t = valueOf(parseTenant('quotas:\n  person: 50\n  per_person: {alice: 80}\n  per_month:\n    "2026-12": {per_person: {alice: 200}, per_team: {research: 900}}\n', PATH));
    expect(quotaOf(t.quotas, "person", "alice", "2026-12")).toEqual({ usd: 200, setting: "quotas.per_month.2026-12.per_person.alice" });
    expect(quotaOf(t.quotas, "person", "alice", "2027-01")).toEqual({ usd: 80, setting: "quotas.per_person.alice" });
    expect(quotaOf(t.quotas, "team", "research", "2026-12")).toEqual({ usd: 900, setting: "quotas.per_month.2026-12.per_team.research" });
    expect(quotaOf(t.quotas, "team", "research", "2026-11")).toBeNull();
    expectError(errorsOf(parseTenant('quotas:\n  per_month:\n    "2026-13": {per_person: {alice: 1}}\n', PATH)), { path: PATH, field: "quotas.per_month.2026-13", line: 3, reason: "YYYY-MM" });
    expectError(errorsOf(parseTenant('quotas:\n  per_month:\n    "2026-12": {person: 1}\n', PATH)), { path: PATH, field: "quotas.per_month.2026-12.person", reason: "per_person" });
  });

  it("LIM-10 refuses a quota that is not an amount above 0, and keys that are not quotas, with the line", () => {
    expectError(errorsOf(parseTenant("quotas:\n  person: -5\n", PATH)), { path: PATH, field: "quotas.person", line: 2, reason: "above 0" });
    expectError(errorsOf(parseTenant('quotas:\n  per_team:\n    research: "lots"\n', PATH)), { path: PATH, field: "quotas.per_team.research", line: 3, reason: "US dollars" });
    expectError(errorsOf(parseTenant("quotas:\n  persons: 5\n", PATH)), { path: PATH, field: "quotas.persons", line: 2, reason: 'did you mean "person"' });
    expectError(errorsOf(parseTenant("quotas:\n  per_team: 5\n", PATH)), { path: PATH, field: "quotas.per_team", reason: "mapping of team" });
  });

  it("LIM-10 raising or removing a quota is a loosening, lowering one is not", () => {
    const before = valueOf(parseTenant("quotas: {person: 50, per_team: {research: 2000}}\n", PATH));
    const change = (yaml: string) => tenantChange({ before, after: valueOf(parseTenant(yaml, PATH)), reason: "r", by: "ops", at: 1 });
    const raised = change("quotas: {person: 80, per_team: {research: 2000}}\n");
    expect(raised.ok && raised.value.loosening).toBe(true);
    const removed = change("quotas: {person: 50}\n");
    expect(removed.ok && removed.value.loosening).toBe(true);
    const lowered = change("quotas: {person: 20, per_team: {research: 2000}}\n");
    expect(lowered.ok && lowered.value.loosening).toBe(false);
  });
});

describe("LIM-10 monthly quotas: pure logic", () => {
  it("LIM-10 an admitted ask holds its worst case in the person's and the team's month; one that fits neither is refused for the first it passes", () => {
    const [alice, bob, team] = [newQuotaMonth(), newQuotaMonth(), newQuotaMonth()];
    expect(quotaAsk(alice, team, { requestId: "a", worst: 40, personQuota: 100, teamQuota: 120, ...times })).toEqual({ code: "allow", personSpent: 0, personReserved: 40, teamSpent: 0, teamReserved: 40 });
    expect(quotaAsk(bob, team, { requestId: "b", worst: 70, personQuota: 100, teamQuota: 120, ...times }).code).toBe("allow");
    // Bob's own quota has room; the team's (40 + 70 held) does not.
    expect(quotaAsk(bob, team, { requestId: "c", worst: 20, personQuota: 100, teamQuota: 120, ...times })).toEqual({ code: "team", personSpent: 0, personReserved: 70, teamSpent: 0, teamReserved: 110 });
    expect(quotaAsk(alice, team, { requestId: "d", worst: 70, personQuota: 100, teamQuota: NONE, ...times }).code).toBe("person");
    expect([alice.reserved, bob.reserved, team.reserved]).toEqual([40, 70, 110]);
    // A replay answers as before and holds nothing more, though the quota changed meanwhile.
    expect(quotaAsk(bob, team, { requestId: "c", worst: 20, personQuota: 100, teamQuota: 1_000, ...times }).code).toBe("team");
    expect(team.reserved).toBe(110);
  });

  it("LIM-10 a usage drops the held worst case and spends in both months once; a release gives it back; a principal with no team has only its own month", () => {
    const [alice, team] = [newQuotaMonth(), newQuotaMonth()];
    quotaAsk(alice, team, { requestId: "a", worst: 40, personQuota: NONE, teamQuota: 100, ...times });
    quotaAsk(alice, team, { requestId: "b", worst: 40, personQuota: NONE, teamQuota: 100, ...times });
    const u = quotaSettle(alice, team, { kind: "usage", requestId: "a", cost: 15, ...times });
    expect(u).toEqual({ code: "allow", personSpent: 15, personReserved: 40, teamSpent: 15, teamReserved: 40 });
    expect(quotaSettle(alice, team, { kind: "usage", requestId: "a", cost: 15, ...times })).toEqual(u);
    quotaRelease(alice, team, "b");
    quotaRelease(alice, team, "b");
    quotaSettle(alice, team, { kind: "rewarm", requestId: "w", cost: 5, ...times });
    expect([alice.spent, alice.reserved, team.spent, team.reserved]).toEqual([20, 0, 20, 0]);

    const solo = newQuotaMonth();
    expect(quotaAsk(solo, null, { requestId: "a", worst: 30, personQuota: 50, teamQuota: NONE, ...times })).toEqual({ code: "allow", personSpent: 0, personReserved: 30, teamSpent: 0, teamReserved: 0 });
    expect(quotaAsk(solo, null, { requestId: "b", worst: 30, personQuota: 50, teamQuota: NONE, ...times }).code).toBe("person");
    // The held worst case of a call whose usage never came is dropped after holdMs.
    expect(quotaAsk(solo, null, { requestId: "c", worst: 30, personQuota: 50, teamQuota: NONE, ...times, now: 61_000 }).code).toBe("allow");
  });
});

describe("LIM-10 a child's start against the quotas: pure logic", () => {
  it("LIM-10 a check holds nothing, refuses only once a quota is spent (not for what calls under way hold), and answers a replay the same", () => {
    const [alice, team] = [newQuotaMonth(), newQuotaMonth()];
    quotaAsk(alice, team, { requestId: "a", worst: 90, personQuota: 100, teamQuota: 200, ...times });
    expect(quotaCheck(alice, team, { requestId: "c1", personQuota: 100, teamQuota: 200, ...times }).code).toBe("allow");
    expect([alice.reserved, team.reserved]).toEqual([90, 90]);
    quotaSettle(alice, team, { kind: "usage", requestId: "a", cost: 100, ...times });
    expect(quotaCheck(alice, team, { requestId: "c2", personQuota: 100, teamQuota: 200, ...times })).toEqual({ code: "person", personSpent: 100, personReserved: 0, teamSpent: 100, teamReserved: 0 });
    expect(quotaCheck(alice, team, { requestId: "c3", personQuota: NONE, teamQuota: 100, ...times }).code).toBe("team");
    // The first answer is kept: raising the quota later does not change what a replay is told.
    expect(quotaCheck(alice, team, { requestId: "c2", personQuota: 1_000, teamQuota: 1_000, ...times }).code).toBe("person");
    expect(quotaCheck(alice, team, { requestId: "c1", personQuota: 100, teamQuota: 200, ...times }).code).toBe("allow");
  });
});

describe("LIM-10 monthly quotas in the limits processors", () => {
  const boss = agent("boss", { limits: { tree: {}, max_cost_usd: 10 } });
  const started = (tree: string, principal: string | null, team: string | null = null) => jobEvent(tree, { started_by: principal ? "person" : "app", principal, team });

  it("LIM-10 past a person's monthly quota, the job waits for a budget request that names the quota, its numbers and how to raise it", async () => {
    // sonnet asks of $0.018 worst case: a $0.05 quota holds two at once.
    const { calls, jobs, store } = setup([boss], tenantSettings({ quotas: { person: 0.05 } }));
    const [a, b] = [uid("tree"), uid("tree")];
    await jobs.pipe([started(a, "alice"), started(b, "alice")]);
    expect((await store.read("acme", a, a)).settings).toMatchObject({ principal: "alice" });
    const asks = [modelCall(a), modelCall(a)];
    await calls.pipe(asks, { key: a });
    const over = modelCall(b);
    await calls.pipe(over, { key: b });
    const d = calls.read<Decision>("oz0.admissions").at(-1);
    expect(d).toMatchObject({ verdict: "wait", reason_code: "quota_exceeded", limit: "quotas.person", subject: over.request_id, tree_id: b });
    expect(d?.numbers).toMatchObject({ quota_spent_usd: 0, quota_reserved_usd: 0.036, quota_usd: 0.05, worst_usd: 0.018 });
    expect(d?.message).toMatch(/alice's monthly quota of \$0\.05 for 1970-01 \(UTC\).*waits for a budget request.*raises quotas\.person in the settings of tenant acme/);
    // Nothing of the tree was taken for the call that waits.
    expect(store.trees.get(limitsTreeKey("acme", b))?.modelCalls).toBe(0);
    // Usage settles below the worst case ($0.0105 each): room again.
    await calls.pipe(asks.map((x) => usageOf(x, 500)), { key: a });
    expect(store.quotas.get("acme/person:alice/1970-01")).toMatchObject({ spent: 21_000, reserved: 0 });
    await calls.pipe(modelCall(b), { key: b });
    expect(calls.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");
  });

  it("LIM-10 a team's quota holds all its people together; each team's own quota wins over the default", async () => {
    const { calls, jobs } = setup([boss], tenantSettings({ quotas: { team: 1, per_team: { research: 0.04 } } }));
    const [a, b, c] = [uid("tree"), uid("tree"), uid("tree")];
    await jobs.pipe([started(a, "alice", "research"), started(b, "bob", "research"), started(c, "carol", "sales")]);
    await calls.pipe(modelCall(a), { key: a });
    await calls.pipe(modelCall(b), { key: b });
    await calls.pipe(modelCall(b), { key: b });
    await calls.pipe([modelCall(c), modelCall(c), modelCall(c)], { key: c });
    const d = calls.read<Decision>("oz0.admissions");
    expect(d.map((x) => x.verdict)).toEqual(["allow", "allow", "wait", "allow", "allow", "allow"]);
    expect(d[2]).toMatchObject({ reason_code: "quota_exceeded", limit: "quotas.per_team.research" });
    expect(d[2]?.message).toMatch(/team research's monthly quota of \$0\.04/);
  });

  it("LIM-10 a child's ask or start waits once its principal's quota is spent, names the quota, and leaves no slot of the tree taken", async () => {
    const { calls, jobs, store } = setup([boss], tenantSettings({ quotas: { person: 0.01 } }));
    const tree = uid("tree");
    await jobs.pipe(started(tree, "alice"));
    const kid = (kind: "child_ask" | "started", job: string) => jobEvent(tree, { kind, job_id: job, parent_job_id: tree, agent: "boss", depth: 1, run_id: kind === "started" ? `run-${job}` : "run-root" });
    await jobs.pipe(kid("child_ask", "early"), { key: tree });
    expect(jobs.read<Decision>("oz0.admissions").at(-1)?.verdict).toBe("allow");
    const call = modelCall(tree);
    await calls.pipe([call, usageOf(call, 1_000)], { key: tree });
    expect(store.quotas.get("acme/person:alice/1970-01")?.spent).toBe(18_000);
    await jobs.pipe([kid("started", "early"), kid("child_ask", "late")], { key: tree });
    const [start, late] = jobs.read<Decision>("oz0.admissions").slice(-2);
    for (const d of [start, late]) {
      expect(d).toMatchObject({ verdict: "wait", reason_code: "quota_exceeded", limit: "quotas.person", job_id: tree });
      expect(d?.numbers).toMatchObject({ quota_spent_usd: 0.018, quota_usd: 0.01 });
      expect(d?.message).toMatch(/child job is not started: alice's monthly quota of \$0\.01 for 1970-01 \(UTC\) is spent \(\$0\.02\).*waits for a budget request.*oz0 quota set/);
    }
    expect(store.trees.get(limitsTreeKey("acme", tree))).toMatchObject({ children: 0, running: 0 });
  });

  it("LIM-10 a tree with no principal is under no quota, and a call the tree refuses gives back what it held of the quota", async () => {
    const small = agent("boss", { limits: { tree: { model_calls: 1 }, max_cost_usd: 10 } });
    const { calls, jobs, store } = setup([small], tenantSettings({ quotas: { person: 0.04, team: 0.04 } }));
    const [anon, mine] = [uid("tree"), uid("tree")];
    await jobs.pipe([started(anon, null, "research"), started(mine, "alice", "research")]);
    await calls.pipe(modelCall(anon), { key: anon });
    await calls.pipe([modelCall(mine), modelCall(mine)], { key: mine });
    expect(calls.read<Decision>("oz0.admissions").map((x) => x.limit)).toEqual([null, null, "limits.tree.model_calls"]);
    expect(store.quotas.get("acme/person:alice/1970-01")?.reserved).toBe(18_000);
    expect(store.quotas.get("acme/team:research/1970-01")?.reserved).toBe(18_000);
    expect([...store.quotas.keys()].some((k) => k.includes(anon))).toBe(false);
  });

  it("LIM-10 a replayed ask gets the same wait and holds nothing more; the tenant's month gives back what it held for a call a quota holds", async () => {
    const { calls, jobs, store } = setup([boss], tenantSettings({ monthly_budget_usd: 1, quotas: { person: 0.02 } }));
    const tree = uid("tree");
    await jobs.pipe(started(tree, "alice"));
    const [first, second] = [modelCall(tree), modelCall(tree)];
    await calls.pipe([first, second, second], { key: tree });
    const d = calls.read<Decision>("oz0.admissions");
    expect(d.map((x) => x.verdict)).toEqual(["allow", "wait", "wait"]);
    expect(d[2]?.id).toBe(d[1]?.id);
    expect(store.quotas.get("acme/person:alice/1970-01")?.reserved).toBe(18_000);
    expect(store.months.get("acme/1970-01")?.reserved).toBe(18_000);
  });
});
