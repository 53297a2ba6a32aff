import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { Keys } from "../../store/redis/keys.ts";
import { scriptFiles } from "../../store/redis/scripts.ts";
import { parseRef, refOf, REF_PREFIX } from "../../store/objects.ts";

describe("Redis keys and scripts", () => {
  it("puts every key of a run under one hash tag, so a script's keys share a slot", () => {
    const k = new Keys("oz0");
    expect(k.tally("run-7")).toBe("oz0:{run:run-7}:tally");
    expect(k.tally("a{b}c")).toBe("oz0:{run:a_b_c}:tally");
    expect(() => k.tally("")).toThrow(/empty run ID/);
    expect(() => new Keys("bad prefix")).toThrow(/prefix/);
  });

  it("loads each Lua script with a header naming KEYS, ARGV and returns, named by the SHA-1 of its text", () => {
    const files = scriptFiles();
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      expect(f.lua).toMatch(/KEYS\[1\]/);
      expect(f.lua).toMatch(/ARGV\[1\]/);
      expect(f.lua).toMatch(/Returns/);
      expect(f.sha).toBe(createHash("sha1").update(f.lua).digest("hex"));
    }
  });
});

describe("content-addressed refs", () => {
  it("names bytes by their SHA-256, the same bytes always the same ref", () => {
    const a = refOf(Buffer.from("hello"));
    expect(a).toBe(`${REF_PREFIX}2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824`);
    expect(refOf(Buffer.from("hello"))).toBe(a);
    expect(parseRef(a)).toHaveLength(64);
    expect(() => parseRef("oz0-file:sha256:xyz")).toThrow(/not a file ref/);
  });
});

describe("Lua includes", () => {
  it("takes in a shared include where a script asks for it, and leaves no directive behind", () => {
    const files = scriptFiles();
    const admit = files.find((f) => f.name === "limitsAdmitCall");
    expect(admit?.lua).toContain("local function decoded(text)");
    for (const f of files) expect(f.lua).not.toMatch(/^--@include/m);
  });
});
