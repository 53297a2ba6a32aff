/**
 * The output reader in a thread of its own: a downstream consumer is not part of the subject,
 * so its fetching and decoding run beside the subject's thread, not in it. The main thread
 * talks to it through `ThreadedCollector` (collect.ts).
 */
import { parentPort, workerData } from "node:worker_threads";
import kafkajs from "kafkajs";
import { kafkaConfig, type Endpoints } from "../../processors/runner/endpoints.ts";
import { createLogger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import { Collector, type FromCollector, type ToCollector } from "./collect.ts";

const port = parentPort;
if (port === null) throw new Error("collect-thread.ts runs only as a worker thread (ThreadedCollector starts it)");
const { clientId, endpoints } = workerData as { clientId: string; endpoints: Endpoints };
const log = createLogger({ component: "bench-collector" });
const kafka = new kafkajs.Kafka(kafkaConfig(clientId, endpoints, process.env, log));
const serde = new Serde({ registryUrl: endpoints.registryUrl });
let collector: Collector | null = null;

const reply = (m: FromCollector): void => port.postMessage(m);
const failed = (call: number, err: unknown): void => reply({ type: "failed", call, error: String(err) });

port.on("message", (m: ToCollector) => {
  if (m.type === "start") {
    collector = new Collector(kafka, serde, m.topics, m.inputSchema);
    collector.start().then(() => reply({ type: "done", call: m.call }), (err: unknown) => failed(m.call, err));
    return;
  }
  const c = collector;
  if (c === null) return failed(m.call, new Error(`the output reader was asked to ${m.type} before it started`));
  if (m.type === "wait") {
    c.waitFor(m.ids, m.timeoutMs).then(
      ({ last, missing }) => {
        const seen: Array<[string, number]> = [];
        for (const id of m.ids) {
          const at = c.seen.get(id);
          if (at !== undefined) seen.push([id, at]);
        }
        reply({ type: "waited", call: m.call, last, missing, seen, outputs: c.outputs, deadLetters: c.deadLetters });
      },
      (err: unknown) => failed(m.call, err),
    );
  } else {
    c.stop().then(() => reply({ type: "done", call: m.call }), (err: unknown) => failed(m.call, err));
  }
});
