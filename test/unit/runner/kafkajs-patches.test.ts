import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parsePatch } from "diff";
import { describe, expect, it } from "vitest";
import { describeKafkajsPatches, KAFKAJS_PATCH_FILE, KAFKAJS_PATCH_MARK, KAFKAJS_PATCHES, kafkajsFolder, kafkajsPatches } from "../../../processors/runner/kafkajs-patches.ts";
import { unpatched } from "./kafkajs-text.ts";

describe("the project's changes to kafkajs, and whether they are in place (patches/kafkajs+2.2.4.patch)", () => {
  it("SYS-1 the patch file changes exactly the files the check looks at, and each file's change carries the mark", () => {
    const diffs = parsePatch(readFileSync(KAFKAJS_PATCH_FILE, "utf8"));
    expect(diffs.map((d) => d.newFileName).sort()).toEqual(KAFKAJS_PATCHES.map((p) => `b/node_modules/kafkajs/${p.file}`).sort());
    for (const d of diffs) expect(d.hunks.flatMap((h) => h.lines).some((l) => l.startsWith("+") && l.includes(KAFKAJS_PATCH_MARK))).toBe(true);
    // kafkajs's own texts, the patch taken back, carry no mark: the check tells the two apart.
    for (const p of KAFKAJS_PATCHES) expect(unpatched(p.file)).not.toContain(KAFKAJS_PATCH_MARK);
  });

  it("SYS-1 this install has all four, and says so in one line", () => {
    const states = kafkajsPatches();
    expect(states.map((s) => s.applied)).toEqual([true, true, true, true]);
    expect(describeKafkajsPatches(states)).toBe(`kafkajs: the project's 4 changes are in place (${KAFKAJS_PATCH_FILE})`);
  });

  it("SYS-1 an install without the patch (npm ci --ignore-scripts) is told apart, naming each change missing and what runs without it", () => {
    const folder = mkdtempSync(join(tmpdir(), "oz0-kafkajs-"));
    cpSync(join(kafkajsFolder(), "src"), join(folder, "src"), { recursive: true });
    const [queue] = KAFKAJS_PATCHES.filter((p) => p.file.includes("requestQueue"));
    writeFileSync(join(folder, queue!.file), unpatched(queue!.file));
    const states = kafkajsPatches(folder);
    expect(states.filter((s) => !s.applied).map((s) => s.file)).toEqual([queue!.file]);
    expect(describeKafkajsPatches(states)).toMatch(/^kafkajs: 1 of the project's 4 changes are missing .*pending requests checked only while some wait \(without it each connection runs a timer every millisecond\)$/);
    expect(kafkajsPatches(join(folder, "nowhere")).every((s) => !s.applied)).toBe(true);
  });
});
