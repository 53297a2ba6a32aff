/**
 * The serde encodes every output into a buffer it reuses: the bytes must be those of the
 * schema's own encoding behind the wire header, for outputs small and large, one after the
 * other, and a large one must not leave a later small one with stale bytes.
 */
import { describe, expect, it } from "vitest";
import { schema } from "../../schemas/catalog.ts";
import { Serde } from "../../schemas/serde.ts";
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
});
