/**
 * The Kafka thread (`kafka-thread.ts`): runs a `KafkaTransport` for each processor the main
 * thread opens, and hands each batch over to the main thread, where the processor decides it,
 * then commits the outputs it gets back with the batch's offsets, as the transport does in one
 * thread.
 */
import { parentPort, workerData } from "node:worker_threads";
import kafkajs from "kafkajs";
import { kafkaConfig, type Endpoints } from "./endpoints.ts";
import { Oz0Error } from "./errors.ts";
import type { Level, Logger } from "./log.ts";
import { packRecords, unpackOutputs } from "./thread-batches.ts";
import { kafkaTransport, type OutMessage, type Transport } from "./transport.ts";
import type { FromKafkaThread, ThreadError, ToKafkaThread } from "./kafka-thread.ts";

const port = parentPort;
if (port === null) throw new Error("kafka-thread-worker.ts runs only as a worker thread (kafka-thread.ts starts it)");
const post = (m: FromKafkaThread, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);
const { clientId, endpoints } = workerData as { clientId: string; endpoints: Endpoints };

/** Log lines go to the main thread's logger, which writes them (or leaves them out) as its own. */
function postingLogger(base: Record<string, unknown>): Logger {
  const emit = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    try {
      post({ type: "log", level, msg, fields: { ...base, ...fields } });
    } catch (err) {
      // A field a thread cannot be handed (a function): the line still goes, without its fields.
      post({ type: "log", level, msg, fields: { ...base, fields_left_out: String(err) } });
    }
  };
  return { debug: emit("debug"), info: emit("info"), warn: emit("warn"), error: emit("error"), child: (fields) => postingLogger({ ...base, ...fields }) };
}

const log = postingLogger({});
const kafka = new kafkajs.Kafka(kafkaConfig(clientId, endpoints, process.env, log));

const transports = new Map<number, Transport>();
const waiting = new Map<number, { resolve(out: OutMessage[]): void; reject(err: Error): void }>();
let nextBatch = 0;

/** An error the main thread threw, as an Oz0Error again, with its name and retriable flag (`errors.ts`). */
function rebuilt(e: ThreadError): Error {
  const err = new Oz0Error(e.message, { retriable: e.retriable });
  err.name = e.name;
  return err;
}

async function open(id: number, options: Extract<ToKafkaThread, { type: "open" }>["options"]): Promise<void> {
  const transport = kafkaTransport({ kafka, log: log.child({ group: options.groupId }), ...options });
  transports.set(id, transport);
  await transport.start(
    (records, ctx) =>
      new Promise<OutMessage[]>((resolve, reject) => {
        const batch = nextBatch++;
        waiting.set(batch, { resolve, reject });
        ctx.afterCommit?.(() => post({ type: "committed", id, batch }));
        const packed = packRecords(records);
        post({ type: "batch", id, batch, records: packed }, [packed.bytes]);
      }),
  );
}

port.on("message", (m: ToKafkaThread) => {
  if (m.type === "answer") {
    const w = waiting.get(m.batch);
    if (!w) return;
    waiting.delete(m.batch);
    if (m.error) w.reject(rebuilt(m.error));
    else if (m.out) w.resolve(unpackOutputs(m.out));
    else w.reject(new Error(`the main thread answered batch ${m.batch} with neither outputs nor an error`));
  } else if (m.type === "open") {
    open(m.id, m.options).then(
      () => post({ type: "opened", id: m.id }),
      (err: unknown) => post({ type: "failed", id: m.id, error: String(err) }),
    );
  } else if (m.type === "close") {
    const t = transports.get(m.id);
    transports.delete(m.id);
    (t ? t.stop() : Promise.resolve()).then(
      () => post({ type: "closed", id: m.id }),
      (err: unknown) => post({ type: "failed", id: m.id, error: String(err) }),
    );
  }
});
