/**
 * The serde encodes every output into a buffer it reuses: the bytes must be those of the
 * schema's own encoding behind the wire header, for outputs small and large, one after the
 * other, and a large one must not leave a later small one with stale bytes.
 */
import { describe, expect, it } from "vitest";
import { schema } from "../../schemas/catalog.ts";
import { DecodeError, Serde, WRITER_NOT_KNOWN } from "../../schemas/serde.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { endpoints } from "../support/kafka.ts";
import { toolCall } from "../support/events.ts";

describe("SYS-1 encoding into a reused buffer", () => {
  it("SYS-1 gives the wire header and the schema's own bytes for outputs of every size, in any order", async () => {
    const serde = new Serde({ registryUrl: endpoints().registryUrl });
    const ids = await serde.registerAll();
    const type = schema("ToolCall").type;
    const sizes = [0, 10, 70_000, 5, 2_000_000, 100, 600_000, 1, 64 * 1024 - 200];
    for (const size of sizes) {
      const call = toolCall({ arguments: JSON.stringify({ text: "é".repeat(size) }) });
      const bytes = serde.encode("ToolCall", call);
      const expected = Buffer.concat([Buffer.from([0]), Buffer.from([0, 0, 0, 0]), type.toBuffer(call)]);
      expected.writeUInt32BE(ids.get("ToolCall") ?? -1, 1);
      expect(bytes.equals(expected)).toBe(true);
      expect(await serde.decode<ToolCall>("ToolCall", bytes)).toEqual(call);
    }
  });

  it("SYS-1 still refuses a value that does not fit its schema, naming the field", async () => {
    const serde = new Serde({ registryUrl: endpoints().registryUrl });
    await serde.registerAll();
    expect(() => serde.encode("ToolCall", { ...toolCall(), context_used: "many" })).toThrow(/context_used/);
  });

  it("SYS-1 decodes without waiting once the writer's schema is known, and refuses bad input as decode does", async () => {
    const writer = new Serde({ registryUrl: endpoints().registryUrl });
    await writer.registerAll();
    const call = toolCall();
    const bytes = writer.encode("ToolCall", call);
    // A reader that has not seen the schema yet must fetch it first.
    const reader = new Serde({ registryUrl: endpoints().registryUrl });
    expect(reader.decodeKnown("ToolCall", bytes)).toBe(WRITER_NOT_KNOWN);
    expect(await reader.decode<ToolCall>("ToolCall", bytes)).toEqual(call);
    expect(reader.decodeKnown<ToolCall>("ToolCall", bytes)).toEqual(call);
    // The writer knows its own schemas from registering them.
    expect(writer.decodeKnown<ToolCall>("ToolCall", bytes)).toEqual(call);
    for (const [bad, words] of [
      [null, /empty message/],
      [Buffer.from([1, 2, 3]), /not in the Confluent wire format/],
      [bytes.subarray(0, bytes.length - 4), /does not decode with schema ID/],
    ] as const) {
      expect(() => reader.decodeKnown("ToolCall", bad)).toThrow(DecodeError);
      expect(() => reader.decodeKnown("ToolCall", bad)).toThrow(words);
      await expect(reader.decode("ToolCall", bad)).rejects.toThrow(words);
    }
  });
});
