import { describe, expect, it } from "vitest";
import { Oz0Error, StoreRefused, TransientError } from "../../../lib/errors.ts";
import type { RedisClient } from "../../../store/redis/client.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { ScriptReplyError, defineScript, flag, integer, integers, text, texts, type Script } from "../../../store/redis/script.ts";
import { scriptFiles } from "../../../store/redis/scripts.ts";
import { hashTag } from "../../../store/redis/slots.ts";
import { joinJobLabelsScript } from "../../../processors/read-result/index.ts";
import { retentionExtend, retentionRecord, retentionUnlock } from "../../../processors/retention/redis-store.ts";
import { conversationTurnScript, filesTreeScript, offloadThresholdScript } from "../../../processors/files/redis-store.ts";
import { treeEraseBegin, treeHoldCovered, treeHoldSet, treeRelease } from "../../../store/tree-holds.ts";
import { treeErase } from "../../../store/tree-data.ts";
import { apiKeyCreate, apiKeyRevoke } from "../../../client/gateway/redis-store.ts";
import { limitsForecastOnce, limitsForecastRecord, limitsQuota, limitsTenant, limitsTenantSpends } from "../../../processors/limits/redis-budget-store.ts";
import { limitsAdmitCall, limitsBudgetAnswer, limitsChild, limitsInit, limitsJobEvent, limitsSettle, limitsTreeSteps, jobEnding, unknownOutcomeAnswer, unknownOutcomePut } from "../../../processors/limits/redis-store.ts";
import { countLoops, loopCommit } from "../../../processors/loops/redis-store.ts";

const k = new Keys("test");
const timers = { hold: 1, keep: 2, ttl: 3 };

/** Each descriptor with an input that names every key it takes. */
const described: Array<[Script<never, unknown>, unknown]> = [
  [retentionExtend, { tenant: "acme", value: "i\nt", ms: 1000 }],
  [retentionUnlock, { tenant: "acme", value: "i\nt" }],
  [retentionRecord, { tenant: "acme", at: 1, instance: "i" }],
  [joinJobLabelsScript, { job: { tenant: "acme", tree: "t1", job: "j1" }, labels: ["pii"] }],
  [filesTreeScript, { tenant: "acme", tree: "t1", op: "start", event: "e1", job: "j1", conversation: null, at: { source: "oz0.jobs:0", offset: "7" } }],
  [conversationTurnScript, { tenant: "acme", conversation: "c1", tree: "t1", previous: null }],
  [offloadThresholdScript, { tenant: "acme", tree: "t1", job: "j1", resolved: 2000 }],
  [treeHoldSet, { tenant: "acme", tree: "t1", reason: "audit", by: "ops", at: 1 }],
  [treeHoldCovered, { tenant: "acme", tree: "t1", covered: { files: 1, traceParts: 2, jobs: 3 }, by: "ops", at: 1 }],
  [treeEraseBegin, { tenant: "acme", tree: "t1", by: "ops", at: 1 }],
  [treeRelease, { tenant: "acme", tree: "t1" }],
  [treeErase, { tenant: "acme", tree: "t1", tag: "test:{tree:acme/t1}:", names: ["test:{tree:acme/t1}:x"] }],
  [apiKeyCreate, { id: "k1", hash: "h", now: 1, binding: { id: "k1", tenant: "acme", agent: "a", tree_id: "t1", job_id: "j1", run_id: "r1", created_by: "ops", created_at: 1, expires_at: 2, revoked_at: null, revoked_by: null } }],
  [apiKeyRevoke, { id: "k1", revocation: { at: 1, by: "ops" } }],
  [limitsTenant, { tenant: "acme", month: "2026-12", step: ["ask", "r1", 5, 100, 1], timers }],
  [limitsTenantSpends, { tenant: "acme", month: "2026-12", spends: [{ kind: "usage", requestId: "r1", cost: 3, now: 1 }], timers }],
  [limitsQuota, { who: { tenant: "acme", principal: "ann", team: "ops" }, month: "2026-12", step: ["ask", "r1", 5, 10, 20], now: 1, timers }],
  [limitsForecastRecord, { tenant: "acme", agent: "a", tree: "t1", bucket: 2, window: 50, ttl: 60 }],
  [limitsForecastOnce, { tenant: "acme", tree: "t1", requestId: "r1", claim: { chance: 0.5 } }],
  ...[limitsAdmitCall, limitsSettle, limitsTreeSteps, limitsChild, limitsJobEvent].map((s) => [s, { tenant: "acme", tree: "t1", args: ["ended", "", "j1", 0, 60] }] as [Script<never, unknown>, unknown]),
  [limitsInit, { tenant: "acme", tree: "t1", settings: { tenant: "acme", rootAgent: "a", startedByPerson: false, budget: -1, reserve: "worst", onBudget: "stop", modelCalls: -1, tokens: -1, children: -1, fanOut: -1, depth: -1, wait: -1, warnShare: 800_000, softWall: -1 }, authoritative: true, ttl: 60, root: null }],
  [limitsBudgetAnswer, { request: { tenant: "acme", tree_id: "t1", approval: "ap1" }, answer: { budget: 10 }, ttl: 60 }],
  [jobEnding, { tenant: "acme", tree: "t1", job: "j1", ending: { kind: "timeout" } }],
  [unknownOutcomePut, { request: { approval: "ap1", job_id: "j1", deadline: 5 }, ttl: 60 }],
  [unknownOutcomeAnswer, { approval: "ap1", answer: { outcome: "done" }, leave: false }],
  [loopCommit, { lane: "calls", ttl: 60, write: { tenant: "acme", run: "r1", source: "oz0.tool-calls:0", at: "9", state: "{}", from: "8", memos: [["9", "{}"]], flags: [["stop", "1"]] } }],
  [countLoops, { day: "2026-12-03", ttl: 60, counts: [{ day: "2026-12-03", id: "l1", tenant: "acme", plugin: "p", tool: "t" }] }],
];

const run = <In, Out>(s: Script<In, Out>, input: unknown) => ({ keys: s.keys(k, input as In), args: s.args(input as In) });

describe("typed script descriptors", () => {
  const files = new Map(scriptFiles().map((f) => [f.name, f]));

  it.each(described.map(([s, input]) => [s.name, s, input] as const))("%s names a script of lua/ and as many keys as it takes, of one hash tag", (_name, s, input) => {
    const file = files.get(s.name);
    expect(file, `lua/${s.name}-<keys>.lua`).toBeDefined();
    const { keys, args } = run(s, input);
    expect(keys).toHaveLength(file?.keys ?? -1);
    expect(new Set(keys.map(hashTag)).size).toBe(1);
    for (const a of args) expect(["string", "number"]).toContain(typeof a);
  });

  it("a reply of another shape is a ScriptReplyError naming the script, never retriable", () => {
    // limitsInit and unknownOutcomePut answer nothing their callers read.
    for (const [s, input] of described.filter(([d]) => d !== limitsInit && d !== unknownOutcomePut)) {
      let thrown: unknown;
      try {
        s.decode({ not: "a reply" }, input as never);
      } catch (err) {
        thrown = err;
      }
      expect(thrown, s.name).toBeInstanceOf(ScriptReplyError);
      expect((thrown as ScriptReplyError).message).toContain(`Lua script ${s.name} answered {"not":"a reply"}`);
      expect((thrown as ScriptReplyError).script).toBe(s.name);
      expect(thrown).toBeInstanceOf(Oz0Error);
      expect((thrown as Oz0Error).retriable).toBe(false);
    }
  });

  it("the shared decoders read their shape and refuse others", () => {
    const fail = (expected: string): never => {
      throw new Error(expected);
    };
    expect(integers([1, 2], fail)).toEqual([1, 2]);
    expect(() => integers([1, "2"], fail)).toThrow("a list of integers");
    expect(integer(3, fail)).toBe(3);
    expect(() => integer("3", fail)).toThrow("an integer");
    expect(flag(1, fail)).toBe(true);
    expect(flag(0, fail)).toBe(false);
    expect(() => flag(2, fail)).toThrow("1 or 0");
    expect(text("", fail)).toBe("");
    expect(() => text(null, fail)).toThrow("a string");
    expect(texts(["a"], fail)).toEqual(["a"]);
    expect(() => texts([1], fail)).toThrow("a list of strings");
  });

  it("each descriptor decodes the replies its script gives", () => {
    expect(retentionExtend.decode(1)).toBe(true);
    expect(retentionUnlock.decode(0)).toBe(false);
    expect(retentionRecord.decode(1)).toBe(true);
    expect(joinJobLabelsScript.decode([1, 3])).toEqual({ added: 1, total: 3 });
    expect(() => joinJobLabelsScript.decode([1])).toThrow(/Lua script joinJobLabels answered \[1\], not \{ added, total \}/);
    expect(filesTreeScript.decode(0)).toBe(false);
    expect(conversationTurnScript.decode([1, "t0"])).toEqual({ applied: true, previous: "t0" });
    expect(conversationTurnScript.decode([0, null])).toEqual({ applied: false, previous: null });
    expect(offloadThresholdScript.decode(["off", 5_000])).toEqual({ threshold: "off", ttlMs: 5_000 });
    expect(offloadThresholdScript.decode(["2000", -1])).toEqual({ threshold: 2000, ttlMs: -1 });
    expect(() => offloadThresholdScript.decode("2000")).toThrow(/Lua script offloadThreshold answered "2000", not \{ threshold, ms kept yet \}/);
    expect(treeHoldSet.decode([1, "audit", "ops", "5"])).toEqual({ made: true, reason: "audit", by: "ops", at: 5 });
    expect(treeHoldSet.decode([-1, "ops\n5"])).toEqual({ erasing: "ops\n5" });
    expect(() => treeHoldSet.decode([2, "x"])).toThrow(/Lua script treeHold answered \[2,"x"\]/);
    expect(treeHoldCovered.decode("")).toBe(false);
    expect(treeHoldCovered.decode([1, "a"])).toBe(true);
    expect(treeEraseBegin.decode(-1)).toBe(false);
    expect(treeRelease.decode("")).toBeNull();
    expect(treeRelease.decode(["reason", "audit"])).toEqual({ reason: "audit" });
    expect(treeErase.decode(-1)).toBe(-1);
    expect(apiKeyCreate.decode(-1)).toBe("taken");
    expect(apiKeyRevoke.decode("")).toBeNull();
    expect(limitsTenant.decode([0, 1, 2, 3])).toMatchObject({ spent: 1, reserved: 2, spentBefore: 3 });
    expect(() => limitsTenant.decode([99, 0, 0, 0])).toThrow(/Lua script limitsTenant answered \[99,0,0,0\], not a code of the \d+ of tenant-budget.ts/);
    expect(limitsTenantSpends.decode([0, 1, 2, 3, 0, 4, 5, 6])).toHaveLength(2);
    expect(() => limitsTenantSpends.decode([0, 1, 2])).toThrow(/limitsTenantSpends .* not 4 numbers for each spend/);
    expect(() => limitsQuota.decode([99])).toThrow(/Lua script limitsQuota answered \[99\]/);
    expect(limitsForecastRecord.decode([1])).toBe(true);
    expect(limitsForecastOnce.decode([1, 0, 500000, 7])).toEqual({ given: true, taken: false, chance: 0.5, spent: 7 });
    expect(limitsAdmitCall.decode([0, 1, 2], { tenant: "acme", tree: "t1", args: [] })).toEqual([0, 1, 2]);
    // The tree's state expired between the read and the script: retriable, the batch sets it anew.
    expect(() => limitsSettle.decode([-1], { tenant: "acme", tree: "t1", args: [] })).toThrow(TransientError);
    expect(() => limitsChild.decode(["x"], { tenant: "acme", tree: "t1", args: [] })).toThrow(/Lua script limitsChild answered \["x"\], not a list of integers \(tree t1\)/);
    expect(limitsBudgetAnswer.decode("")).toBeNull();
    expect(limitsBudgetAnswer.decode('{"budget":10}')).toEqual({ budget: 10 });
    expect(jobEnding.decode(0)).toBe(false);
    expect(unknownOutcomeAnswer.decode("")).toBeNull();
    expect(() => unknownOutcomeAnswer.decode(3)).toThrow(/Lua script unknownOutcomeAnswer answered 3/);
    expect(loopCommit.decode([0, "12"])).toEqual({ applied: false, at: "12" });
    const two = { day: "d", ttl: 1, counts: [{ day: "d", id: "a", tenant: "t", plugin: "p", tool: "x" }, { day: "d", id: "b", tenant: "t", plugin: "p", tool: "x" }] };
    expect(countLoops.decode([1, 4, 0, 4], two)).toEqual([{ counted: true, count: 4 }, { counted: false, count: 4 }]);
    expect(() => countLoops.decode([1, 4], two)).toThrow(/Lua script countLoops answered \[1,4\], not 2 numbers for each of 2 loops/);
  });

  it("a script sent in a slot pipeline is an EVALSHA of its digest with its keys, then its arguments; the command built carries its text until the socket has had it", async () => {
    const input = { day: "2026-12-03", ttl: 60, counts: [{ day: "2026-12-03", id: "l1", tenant: "acme", plugin: "p", tool: "t" }] };
    const c = countLoops.command(k, input);
    const file = scriptFiles().find((f) => f.name === "countLoops");
    const keysAndArgs = [k.loopStats("2026-12-03", "counts"), k.loopStats("2026-12-03", "counted"), 60, 1, "l1", "acme", "p", "t"];
    expect(c.name).toBe("evalsha");
    expect(c.key).toBe(k.loopStats("2026-12-03", "counts"));
    expect(c.args).toEqual([file?.sha, 2, ...keysAndArgs]);
    const socket = {};
    const first = c.build?.();
    expect(String(first?.toWritable(socket))).toContain(file?.lua.slice(0, 40));
    expect(first?.name).toBe("eval");
    const second = c.build?.();
    second?.toWritable(socket);
    expect([second?.name, second?.args[0]]).toEqual(["evalsha", file?.sha]);
    second?.reject(Object.assign(new Error("NOSCRIPT No matching script. Please use EVAL."), { name: "ReplyError" }));
    await expect(second?.promise).rejects.toThrow(/NOSCRIPT/);
    const third = c.build?.();
    third?.toWritable(socket);
    expect(third?.name).toBe("eval");
    expect(apiKeyRevoke.decode([1, '{"id":"k1"}', '{"at":1,"by":"ops"}'])).toEqual({ now: true, binding: { id: "k1" }, revocation: { at: 1, by: "ops" } });
  });

  it("run sends a script by its digest, and once more with its text when the server answers NOSCRIPT", async () => {
    const s = defineScript({ name: "retentionExtend", keys: (kk, t: string) => [kk.retentionLock(t)], args: () => ["v", 1], reply: flag });
    const file = scriptFiles().find((f) => f.name === "retentionExtend");
    const sent: unknown[][] = [];
    const server = (known: boolean) =>
      ({
        evalsha: (...a: unknown[]) => (sent.push(["evalsha", ...a]), known ? Promise.resolve(1) : Promise.reject(Object.assign(new Error("NOSCRIPT No matching script. Please use EVAL."), { name: "ReplyError" }))),
        eval: (...a: unknown[]) => (sent.push(["eval", ...a]), Promise.resolve(0)),
      }) as unknown as RedisClient;
    expect(await s.run(server(true), k, "acme")).toBe(true);
    expect(sent).toEqual([["evalsha", file?.sha, 1, k.retentionLock("acme"), "v", 1]]);
    sent.length = 0;
    expect(await s.run(server(false), k, "acme")).toBe(false);
    expect(sent).toEqual([["evalsha", file?.sha, 1, k.retentionLock("acme"), "v", 1], ["eval", file?.lua, 1, k.retentionLock("acme"), "v", 1]]);
  });

  it("run classifies a Redis failure once, naming the step and the key", async () => {
    const s = defineScript({ name: "retentionExtend", keys: (kk, t: string) => [kk.retentionLock(t)], args: () => ["v", 1], reply: flag, what: (t) => `lengthening the lock of ${t}` });
    const failing = (err: Error) => ({ evalsha: () => Promise.reject(err) }) as unknown as RedisClient;
    const gone = await s.run(failing(new Error("Connection is closed.")), k, "acme").catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(TransientError);
    expect((gone as Error).message).toBe(`Redis failed lengthening the lock of acme on key ${k.retentionLock("acme")}: Connection is closed.; the batch is tried again`);
    const wrong = Object.assign(new Error("WRONGTYPE Operation against a key holding the wrong kind of value"), { name: "ReplyError" });
    const refused = await s.run(failing(wrong), k, "acme").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreRefused);
    expect((refused as StoreRefused).key).toBe(k.retentionLock("acme"));
  });
});
