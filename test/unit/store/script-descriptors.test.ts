import { describe, expect, it } from "vitest";
import { Oz0Error, StoreRefused, TransientError } from "../../../lib/errors.ts";
import type { RedisClient } from "../../../store/redis/client.ts";
import { Keys } from "../../../store/redis/keys.ts";
import { ScriptReplyError, defineScript, flag, integer, integers, text, texts, type Script } from "../../../store/redis/script.ts";
import { scriptFiles } from "../../../store/redis/scripts.ts";
import { hashTag } from "../../../store/redis/slots.ts";
import { joinJobLabelsScript } from "../../../processors/read-result/index.ts";
import { retentionExtend, retentionRecord, retentionUnlock } from "../../../processors/retention/state.ts";
import { conversationTurnScript, filesTreeScript, offloadThresholdScript } from "../../../processors/files/state.ts";
import { treeEraseBegin, treeHoldCovered, treeHoldSet, treeRelease } from "../../../store/tree-holds.ts";
import { treeErase } from "../../../store/tree-data.ts";
import { apiKeyCreate, apiKeyRevoke } from "../../../store/gateway-keys.ts";

const k = new Keys("test");

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
    for (const [s] of described) {
      let thrown: unknown;
      try {
        s.decode({ not: "a reply" });
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
    expect(offloadThresholdScript.decode("off")).toBe("off");
    expect(offloadThresholdScript.decode("2000")).toBe(2000);
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
    expect(apiKeyRevoke.decode([1, '{"id":"k1"}', '{"at":1,"by":"ops"}'])).toEqual({ now: true, binding: { id: "k1" }, revocation: { at: 1, by: "ops" } });
  });

  it("run classifies a Redis failure once, naming the step and the key", async () => {
    const s = defineScript({ name: "retentionExtend", keys: (kk, t: string) => [kk.retentionLock(t)], args: () => ["v", 1], reply: flag, what: (t) => `lengthening the lock of ${t}` });
    const failing = (err: Error) => ({ defineCommand() {}, [scriptFiles().find((f) => f.name === "retentionExtend")?.command ?? ""]: () => Promise.reject(err) }) as unknown as RedisClient;
    const gone = await s.run(failing(new Error("Connection is closed.")), k, "acme").catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(TransientError);
    expect((gone as Error).message).toBe(`Redis failed lengthening the lock of acme on key ${k.retentionLock("acme")}: Connection is closed.; the batch is tried again`);
    const wrong = Object.assign(new Error("WRONGTYPE Operation against a key holding the wrong kind of value"), { name: "ReplyError" });
    const refused = await s.run(failing(wrong), k, "acme").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreRefused);
    expect((refused as StoreRefused).key).toBe(k.retentionLock("acme"));
  });
});
