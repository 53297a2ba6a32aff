/**
 * The whole pipeline of `npm start` in a test's process, on groups of the test's own that
 * start at their inputs' end, so it handles the test's events only, whatever earlier tests
 * left on the shared topics. The agents and plugins of `configDir` are published first, as the
 * load test publishes its own.
 */
import kafkajs from "kafkajs";
import { publishLoadConfig } from "../../bench/load/publish-config.ts";
import { untilReady } from "../../bench/load/run.ts";
import { startPipeline, type Pipeline } from "../../topology/run.ts";
import { kafkaConfig } from "../../processors/runner/endpoints.ts";
import type { Logger } from "../../processors/runner/log.ts";
import { Serde } from "../../schemas/serde.ts";
import { endpoints } from "./kafka.ts";

/** Starts the pipeline with groups `oz0.<name>.` once `configDir` is published, and waits until it is ready. */
export async function startTestPipeline(name: string, configDir: string, reason: string, log: Logger): Promise<Pipeline> {
  const e = endpoints();
  const kafka = new kafkajs.Kafka({ ...kafkaConfig(`oz0-${name}`, e, process.env, log), logLevel: kafkajs.logLevel.ERROR });
  const serde = new Serde({ registryUrl: e.registryUrl });
  await serde.registerAll();
  await publishLoadConfig(kafka, serde, log, { dir: configDir, reason });
  const pipeline = await startPipeline(e, log, { ops: { host: "127.0.0.1", port: 0 }, groupPrefix: `oz0.${name}.`, startAt: "end" });
  await untilReady(pipeline, 120_000);
  return pipeline;
}

/** Stops it and deletes its groups: they were the test's alone, and nothing resumes them. */
export async function stopTestPipeline(pipeline: Pipeline | undefined): Promise<void> {
  if (!pipeline) return;
  await pipeline.stop().catch(() => undefined);
  const admin = pipeline.kafka.admin();
  await admin.connect().then(() => admin.deleteGroups([...pipeline.groups.values()]).catch(() => undefined), () => undefined);
  await admin.disconnect().catch(() => undefined);
}
