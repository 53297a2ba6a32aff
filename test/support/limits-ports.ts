/**
 * What the limits' two smaller ports (processors/limits/store.ts) must do, as one suite each: a
 * job's standing (`StandingStore`) and the unknown outcomes waiting for a person
 * (`UnknownOutcomeStore`, LIM-11). The memory stores run them in the unit tests, the Redis
 * stores on the real Redis in the integration tests.
 */
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { NO_STANDING, standingOf, type Ending, type EndingRecord } from "../../processors/limits/standing.ts";
import { standingFields, type StandingStore, type UnknownOutcomeStore } from "../../processors/limits/store.ts";
import type { UnknownOutcomeAnswer, UnknownOutcomeRequest } from "../../processors/limits/unknown-outcomes.ts";

export interface StandingStoreSubject {
  readonly store: StandingStore;
  /** Sets fields of a tree's limits hash, as the limits scripts write them. */
  readonly seed: (tenant: string, tree: string, fields: Readonly<Record<string, string>>) => Promise<void>;
}

const ids = (what: string) => ({ tenant: `t_${randomUUID().slice(0, 8)}`, tree: `tree-${what}-${randomUUID().slice(0, 8)}`, job: `job-${randomUUID().slice(0, 8)}` });

function ending(code: string, by: string): Ending {
  return { code, limit: null, message: `Ended with ${code}.`, by, processor: "limits-model-calls" };
}

export function standingStoreBehaviour(make: () => Promise<StandingStoreSubject> | StandingStoreSubject): void {
  it("LIM-1 a job nothing was kept for reads one null for each of standingFields, and stands as NO_STANDING", async () => {
    const { store } = await make();
    const { tenant, tree, job } = ids("none");
    const [values] = await store.read([{ tenant, tree, job }]);
    expect(values).toEqual(standingFields(job).map(() => null));
    expect(standingOf(values ?? [], 0, () => undefined, "")).toEqual(NO_STANDING);
  });

  it("LIM-1 LIM-3 a kept ending is read back whole; the first ending of a job wins, in one call as in a later one", async () => {
    const { store } = await make();
    const { tenant, tree, job } = ids("first");
    const first: EndingRecord = { tenant, tree, job, ending: ending("UsageLimitExceeded", "in-1") };
    await store.record([first, { tenant, tree, job, ending: ending("AgentTimeout", "in-2") }]);
    await store.record([{ tenant, tree, job, ending: ending("LoopDetected", "in-3") }]);
    await store.record([first]);
    const [values] = await store.read([{ tenant, tree, job }]);
    expect(JSON.parse(values?.[0] ?? "null")).toEqual(first.ending);
    expect(standingOf(values ?? [], 0, () => undefined, "").ending).toEqual(first.ending);
  });

  it("LIM-1 FILE-5 jobs are read in the order asked; another job, another tree and another tenant's tree of the same ID hold their own endings", async () => {
    const { store } = await make();
    const a = ids("order");
    const b = { ...a, job: `${a.job}-b` };
    const otherTree = { ...a, tree: `${a.tree}-2` };
    const otherTenant = { ...a, tenant: `${a.tenant}_2` };
    await store.record([{ ...a, ending: ending("UsageLimitExceeded", "a") }, { ...otherTenant, ending: ending("AgentTimeout", "o") }]);
    const read = await store.read([b, a, otherTree, otherTenant]);
    expect(read.map((v) => (v[0] ? (JSON.parse(v[0]) as Ending).code : null))).toEqual([null, "UsageLimitExceeded", null, "AgentTimeout"]);
  });

  it("LIM-1 LIM-8 read gives the limits hash's fields in standingFields' order: the ended flag, the job's clock and the tree's spend against its soft wall", async () => {
    const { store, seed } = await make();
    const { tenant, tree, job } = ids("fields");
    const fields = standingFields(job);
    await seed(tenant, tree, Object.fromEntries(fields.slice(1).map((f, i) => [f, `v${i + 1}`])));
    const [values] = await store.read([{ tenant, tree, job }]);
    expect(values).toEqual([null, ...fields.slice(1).map((_, i) => `v${i + 1}`)]);
    // Each seeded field means what standingOf reads it as.
    await seed(tenant, tree, { [fields[1] as string]: "1" });
    const [ended] = await store.read([{ tenant, tree, job }]);
    expect(standingOf(ended ?? [], 0, () => undefined, "").ending?.code).toBe("JobEnded");
  });
}

const HOUR = 3600_000;

function request(approval: string, deadline: number, over: Partial<UnknownOutcomeRequest> = {}): UnknownOutcomeRequest {
  return { approval, kind: "unknown", tenant: "acme", tree_id: `tree-${approval}`, job_id: `job-${approval}`, run_id: null, message: "The job's outcome is unknown.", decision_id: `d-${approval}`, asked_at: deadline - HOUR, deadline, ...over };
}

function answerOf(outcome: UnknownOutcomeAnswer["outcome"], by: string, at: number): UnknownOutcomeAnswer {
  return { outcome, by, comment: null, at };
}

/**
 * `make` gives a store whose index of those waiting holds only what this suite puts in it (the
 * Redis store: keys of the test's own prefix).
 */
export function unknownOutcomeStoreBehaviour(make: () => Promise<UnknownOutcomeStore> | UnknownOutcomeStore): void {
  const approval = (n: string) => `u-${n}-${randomUUID().slice(0, 8)}`;
  const now = 1_900_000_000_000;

  it("LIM-11 a request is kept once: a replay with other content changes nothing; get of one never kept is null", async () => {
    const store = await make();
    const a = approval("once");
    const r = request(a, now + HOUR);
    await store.put(r, now);
    await store.put({ ...r, message: "changed", deadline: now + 2 * HOUR }, now);
    expect(await store.get(a)).toEqual({ request: r, answered: null });
    expect((await store.waiting()).filter((x) => x.approval === a)).toEqual([r]);
    expect(await store.get(approval("never"))).toBeNull();
  });

  it("LIM-11 those waiting come soonest deadline first; due gives those whose deadline passed, soonest first, at most the limit", async () => {
    const store = await make();
    const [late, soon, mid] = [approval("late"), approval("soon"), approval("mid")];
    await store.put(request(late, now + 3 * HOUR), now);
    await store.put(request(soon, now + HOUR), now);
    await store.put(request(mid, now + 2 * HOUR), now);
    const mine = new Set([late, soon, mid]);
    expect((await store.waiting()).filter((x) => mine.has(x.approval)).map((x) => x.approval)).toEqual([soon, mid, late]);
    expect((await store.due(now, 10)).filter((x) => mine.has(x.request.approval))).toEqual([]);
    const due = await store.due(now + 2 * HOUR, 10);
    expect(due.filter((x) => mine.has(x.request.approval)).map((x) => [x.request.approval, x.answered])).toEqual([
      [soon, null],
      [mid, null],
    ]);
    expect((await store.due(now + 3 * HOUR, 1)).map((x) => x.request.approval)).toEqual([soon]);
  });

  it("LIM-11 answered once: the first answer holds and a later one gets it back; an approval never kept is answered null", async () => {
    const store = await make();
    const a = approval("answer");
    await store.put(request(a, now + HOUR), now);
    const first = answerOf("happened", "person:alice", now + 1000);
    expect(await store.answer(a, first, true)).toEqual(first);
    expect(await store.answer(a, answerOf("stop", "person:bob", now + 2000), true)).toEqual(first);
    expect(await store.get(a)).toEqual({ request: request(a, now + HOUR), answered: first });
    expect(await store.answer(approval("never"), first, true)).toBeNull();
  });

  it("LIM-11 a person's answer leaves the index at once; the timer's stays due, with its answer, until done", async () => {
    const store = await make();
    const [person, timer] = [approval("person"), approval("timer")];
    await store.put(request(person, now + HOUR), now);
    await store.put(request(timer, now + HOUR), now);
    await store.answer(person, answerOf("run_again", "person:alice", now + 1000), true);
    const stop = answerOf("stop", "unknown-deadlines", now + 2 * HOUR);
    await store.answer(timer, stop, false);
    const mine = new Set([person, timer]);
    expect((await store.due(now + 2 * HOUR, 10)).filter((x) => mine.has(x.request.approval))).toEqual([{ request: request(timer, now + HOUR), answered: stop }]);
    await store.done(timer);
    expect((await store.due(now + 2 * HOUR, 10)).filter((x) => mine.has(x.request.approval))).toEqual([]);
    expect((await store.waiting()).filter((x) => mine.has(x.approval))).toEqual([]);
    // Done leaves the request and its answer readable.
    expect((await store.get(timer))?.answered).toEqual(stop);
  });

  it("LIM-11 listing those waiting (oz0 unknown list) leaves a timer's answer due until done: its decision is still published after a failed try", async () => {
    const store = await make();
    const timer = approval("listed");
    await store.put(request(timer, now + HOUR), now);
    const stop = answerOf("stop", "unknown-deadlines", now + 2 * HOUR);
    await store.answer(timer, stop, false);
    expect((await store.waiting()).filter((x) => x.approval === timer)).toEqual([]);
    expect((await store.due(now + 2 * HOUR, 1000)).filter((x) => x.request.approval === timer)).toEqual([{ request: request(timer, now + HOUR), answered: stop }]);
    await store.done(timer);
  });
}
