import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { installed, unpatched } from "./kafkajs-text.ts";

const FILE = "src/producer/groupMessagesPerPartition.js";

type Group = (o: { topic: string; partitionMetadata: unknown[]; messages: Array<{ key: string; n: number }>; partitioner: (o: { message: { key: string } }) => number }) => Record<string, unknown[]>;

const require = createRequire(import.meta.url);

/** The grouping of a kafkajs text, loaded as kafkajs loads it: a CommonJS module. */
function load(text: string, name: string): Group {
  const file = join(mkdtempSync(join(tmpdir(), "oz0-grouping-")), `${name}.cjs`);
  writeFileSync(file, text);
  return require(file) as Group;
}

describe("kafkajs groups a send's messages by partition in linear time (patches/kafkajs+2.2.4.patch, applied after npm ci)", () => {
  it("SYS-1 the installed kafkajs holds the linear grouping, which is what its producer loads", () => {
    expect(readFileSync(installed(FILE), "utf8")).toContain("Patched by oz0");
    const loaded = require("kafkajs/src/producer/groupMessagesPerPartition.js") as Group;
    expect(loaded.toString()).toContain("current.push(message)");
  });

  it("SYS-1 the linear grouping gives the same lists in the same order as kafkajs's own, for random sends", () => {
    const [original, linear] = [load(unpatched(FILE), "original"), load(readFileSync(installed(FILE), "utf8"), "linear")];
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.string({ maxLength: 3 }), n: fc.nat() }), { maxLength: 200 }), fc.integer({ min: 0, max: 8 }), (messages, partitions) => {
        const args = { topic: "t", partitionMetadata: Array.from({ length: partitions }), messages, partitioner: ({ message }: { message: { key: string } }) => message.key.length % Math.max(1, partitions) };
        expect(linear(args)).toEqual(original(args));
      }),
    );
  });
});
