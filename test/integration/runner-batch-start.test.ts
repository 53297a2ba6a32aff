/**
 * The runner tells a core where each input's batch starts in its partition
 * (`InputRecord.batchStart`): every offset before it was committed. The loop lanes drop memos
 * before it; a wrong start would drop a memo a replay still needs.
 */
import { describe, expect, it } from "vitest";
import { createLogger } from "../../processors/runner/log.ts";
import { defineProcessor, type InputRecord } from "../../processors/runner/processor.ts";
import { startProcessor } from "../../processors/runner/runner.ts";
import type { BatchHandler, RawRecord, Transport } from "../../processors/runner/transport.ts";
import type { ToolCall } from "../../schemas/types.ts";
import { toolCall, uid } from "../support/events.ts";
import { serde } from "../support/kafka.ts";

describe("the runner's batch starts, on the real registry", () => {
  it("SYS-1 each input carries the first offset of its partition in the batch it came in, whatever the core is handed", async () => {
    const s = await serde();
    const seen: Array<Pick<InputRecord<ToolCall>, "partition" | "offset" | "batchStart">> = [];
    const capture = defineProcessor<ToolCall>({
      name: uid("capture"),
      input: "oz0.tool-calls",
      outputs: [],
      process: (records) => {
        for (const r of records) seen.push({ partition: r.partition, offset: r.offset, batchStart: r.batchStart });
        return records.map(() => ({ emits: [] }));
      },
    });
    let handler: BatchHandler | undefined;
    const transport: Transport = {
      start: (h) => {
        handler = h;
        return Promise.resolve();
      },
      stop: () => Promise.resolve(),
    };
    const running = await startProcessor(capture, undefined, { transport, serde: s, log: createLogger({ test: "batch-start" }, () => {}) });
    const raw = (partition: number, offset: number): RawRecord => ({ topic: "oz0.tool-calls", partition, offset: String(offset), key: Buffer.from("k"), value: s.encode("ToolCall", toolCall()), timestamp: String(Date.now()) });
    if (!handler) throw new Error("the runner did not start its transport");
    await handler([raw(3, 40), raw(5, 7), raw(3, 41), raw(5, 8), raw(3, 42)], { heartbeat: () => Promise.resolve(), isRunning: () => true });
    await running.stop();
    expect(seen).toEqual([
      { partition: 3, offset: "40", batchStart: "40" },
      { partition: 5, offset: "7", batchStart: "7" },
      { partition: 3, offset: "41", batchStart: "40" },
      { partition: 5, offset: "8", batchStart: "7" },
      { partition: 3, offset: "42", batchStart: "40" },
    ]);
  });
});
