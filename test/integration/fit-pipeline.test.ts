import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Producer } from "kafkajs";
import { loadConfigDir } from "../../config/load.ts";
import { fillInProcessor } from "../../processors/fill-in/processor.ts";
import { fitResultsProcessor } from "../../processors/fit-results/processor.ts";
import { ConfigTable } from "../../processors/runner/config-table.ts";
import { EXACTLY_ONCE_PRODUCER } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import type { RunningProcessor } from "../../processors/runner/runner.ts";
import type { Serde } from "../../schemas/serde.ts";
import type { ResultDelivered, ToolCall, ToolResult, TraceEntry } from "../../schemas/types.ts";
import { collect, kafka, serde, startOnKafka } from "../support/kafka.ts";
import { toolCall, uid } from "../support/events.ts";

describe("budget fill-in and fit processors on the real broker and registry", () => {
  let s: Serde;
  let producer: Producer;
  let table: ConfigTable;
  const running: RunningProcessor[] = [];
  const plugin = uid("docs");

  beforeAll(async () => {
    s = await serde();
    producer = kafka().producer(EXACTLY_ONCE_PRODUCER);
    await producer.connect();
    // The example manifest, published under a plugin ID of this test's own.
    const manifest = (await loadConfigDir("config/examples")).plugins.get("acme_docs");
    const value = JSON.stringify({ ...manifest, name: plugin, tools: manifest?.tools.map((t) => ({ ...t, id: plugin })) });
    await producer.send({ topic: "oz0.config", messages: [{ key: `plugin/${plugin}`, value: s.encode("ConfigRecord", { kind: "plugin", id: plugin, value, source: "test", reason: null, ts: Date.now() }) }] });
    table = await ConfigTable.start(kafka(), s, createLogger({}, () => {}));
    running.push(await startOnKafka(fillInProcessor, { config: table, spendShare: () => Promise.resolve(null) }, s));
    const noFiles = () => Promise.reject(new Error("this test offloads nothing"));
    running.push(await startOnKafka(fitResultsProcessor, { load: () => Promise.resolve(null), threshold: () => 10_000, storeFile: noFiles, config: table }, s));
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await table?.stop();
    await producer?.disconnect();
  });

  it("FIT-15 a model's call without a budget reaches oz0.tool-calls with one filled in; its result comes back fitted with a trace entry", async () => {
    const run = uid("run");
    const call = toolCall({ run_id: run, plugin, tool: plugin, function: "get_page", arguments: JSON.stringify({ path: "guide.md", view: "summary" }), context_used: 96_000 });
    await producer.send({ topic: "oz0.tool-calls.requested", messages: [{ key: run, value: s.encode("ToolCall", call) }] });
    const [filled] = await collect<ToolCall>("oz0.tool-calls", "ToolCall", s, (c) => c.run_id === run, 1, 60_000);
    expect(JSON.parse(filled?.arguments ?? "{}")).toEqual({ path: "guide.md", view: "summary", budget: 8000 });

    const text = ["# Guide", "", "The guide starts here. It is long.", ...Array.from({ length: 200 }, (_, i) => `## Part ${i}\n\nPart ${i} begins here. It goes on for a while about topic ${i}.`)].join("\n");
    const res: ToolResult = {
      ...call,
      id: uid("res"),
      arguments: filled?.arguments ?? "{}",
      is_error: false,
      content: JSON.stringify({ content: [{ type: "text", text }] }),
      content_ref: null,
      size_bytes: text.length,
      labels: [],
    };
    delete (res as Partial<ToolCall>).context_used;
    delete (res as Partial<ToolCall>).spend_share;
    await producer.send({ topic: fitResultsProcessor.input, messages: [{ key: run, value: s.encode("ToolResult", res) }] });
    const [out] = await collect<ResultDelivered>("oz0.results-delivered", "ResultDelivered", s, (d) => d.run_id === run, 1, 60_000);
    expect(JSON.parse(out?.fit ?? "{}")).toMatchObject({ view: "summary", budget: 8000 });
    const [entry] = await collect<TraceEntry>("oz0.trace", "TraceEntry", s, (t) => t.run_id === run, 1, 60_000);
    expect(entry).toMatchObject({ section: "Results fitted to a budget", subject: call.call_id, facts: { view: "summary" } });
  });
});
