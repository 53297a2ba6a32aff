import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FILE, LINEAR, ORIGINAL, patch } from "../../../bin/patch-kafkajs.mjs";

type Group = (o: { topic: string; partitionMetadata: unknown[]; messages: Array<{ key: string; n: number }>; partitioner: (o: { message: { key: string } }) => number }) => Record<string, unknown[]>;

const require = createRequire(import.meta.url);

/** The grouping of a kafkajs text, loaded as kafkajs loads it: a CommonJS module. */
function load(text: string, name: string): Group {
  const file = join(mkdtempSync(join(tmpdir(), "oz0-grouping-")), `${name}.cjs`);
  writeFileSync(file, text);
  return require(file) as Group;
}

describe("kafkajs groups a send's messages by partition in linear time (bin/patch-kafkajs.mjs, run after npm ci)", () => {
  it("SYS-1 the installed kafkajs holds the linear grouping, which is what its producer loads", () => {
    expect(readFileSync(FILE, "utf8")).toBe(LINEAR);
    const installed = require("kafkajs/src/producer/groupMessagesPerPartition.js") as Group;
    expect(installed.toString()).toContain("current.push(message)");
  });

  it("SYS-1 the linear grouping gives the same lists in the same order as kafkajs's own, for random sends", () => {
    const [original, linear] = [load(ORIGINAL, "original"), load(LINEAR, "linear")];
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.string({ maxLength: 3 }), n: fc.nat() }), { maxLength: 200 }), fc.integer({ min: 0, max: 8 }), (messages, partitions) => {
        const args = { topic: "t", partitionMetadata: Array.from({ length: partitions }), messages, partitioner: ({ message }: { message: { key: string } }) => message.key.length % Math.max(1, partitions) };
        expect(linear(args)).toEqual(original(args));
      }),
    );
  });

  it("SYS-1 the patch changes only the text it knows, once", () => {
    const dir = mkdtempSync(join(tmpdir(), "oz0-patch-"));
    const known = join(dir, "known.js");
    const other = join(dir, "other.js");
    writeFileSync(known, ORIGINAL);
    writeFileSync(other, "module.exports = () => ({})\n");
    expect(patch(known)).toMatch(/now groups/);
    expect(readFileSync(known, "utf8")).toBe(LINEAR);
    expect(patch(known)).toMatch(/already/);
    expect(patch(other)).toMatch(/left as it is/);
    expect(readFileSync(other, "utf8")).toBe("module.exports = () => ({})\n");
    expect(patch(join(dir, "missing.js"))).toMatch(/not installed/);
  });
});
