import { describe, expect, it } from "vitest";
import { StoreRefused, TransientError } from "../../../processors/runner/errors.ts";
import { byGroups, oneByOne } from "../../../processors/runner/isolate.ts";
import type { Outcome } from "../../../processors/runner/processor.ts";

const refused = (key: string) => new StoreRefused(`Redis refused reading on key ${key}: "WRONGTYPE Operation against a key holding the wrong kind of value"`, { dependency: "redis", key, server: "WRONGTYPE" });

/** Decides items "<group>:<n>" at once; any item of a broken group breaks the whole call, as one pipeline's failed reply does. */
function store(broken: Set<string>, calls: string[][]) {
  return (items: string[]): Promise<Outcome[]> => {
    calls.push(items);
    const bad = items.find((i) => broken.has(i.split(":")[0] ?? ""));
    if (bad) return Promise.reject(refused(`k:${bad.split(":")[0]}`));
    return Promise.resolve(items.map((i) => ({ emits: [{ to: "oz0.call-decisions" as const, key: i, value: i }] })));
  };
}

describe("a failure trying again cannot help, isolated to the inputs that cause it", () => {
  it("SYS-1 byGroups answers everything in one call when nothing fails", async () => {
    const calls: string[][] = [];
    const out = await byGroups(["a:1", "b:1", "a:2"], (i) => i.split(":")[0] ?? "", store(new Set(), calls));
    expect(calls).toHaveLength(1);
    expect(out.every((o) => "emits" in o)).toBe(true);
  });

  it("SYS-1 a broken group dead-letters its own inputs, with the store's words and key, and the other groups answer", async () => {
    const calls: string[][] = [];
    const items = ["a:1", "b:1", "a:2", "c:1", "b:2"];
    const out = await byGroups(items, (i) => i.split(":")[0] ?? "", store(new Set(["b"]), calls));
    expect(out.map((o) => ("emits" in o ? "ok" : o.error))).toEqual(["ok", "failed", "ok", "ok", "failed"]);
    expect(out[1]).toEqual({ invalid: expect.stringContaining("on key k:b") as string, error: "failed" });
    // The whole, then group a, then group b whole and input by input, then group c.
    expect(calls).toEqual([items, ["a:1", "a:2"], ["b:1", "b:2"], ["b:1"], ["b:2"], ["c:1"]]);
  });

  it("SYS-1 oneByOne dead-letters only the input a step refuses", async () => {
    const decide = (items: string[]): Promise<Outcome[]> => (items.includes("x") ? Promise.reject(refused("k")) : Promise.resolve(items.map(() => ({ emits: [] }))));
    expect(await oneByOne(["a", "x", "b"], decide)).toEqual([{ emits: [] }, { invalid: expect.stringContaining("WRONGTYPE") as string, error: "failed" }, { emits: [] }]);
  });

  it("SYS-1 a retriable failure is thrown as it is, for the runner to try the batch again", async () => {
    const down = () => Promise.reject(new TransientError("Redis failed: Connection is closed."));
    await expect(byGroups(["a:1"], () => "a", down)).rejects.toBeInstanceOf(TransientError);
    await expect(oneByOne(["a", "b"], down)).rejects.toBeInstanceOf(TransientError);
  });
});
