/**
 * The processors `npm start` runs, each with how to build the environment its core needs
 * from the shared connections. A processor joins the pipeline by being listed here.
 */
import type { Redis } from "ioredis";
import type { ObjectStore } from "../store/objects.ts";
import { Keys } from "../store/redis/keys.ts";
import { fillInProcessor } from "./fill-in/processor.ts";
import { fitResultsProcessor } from "./fit-results/processor.ts";
import { limitsEnv, limitsJobsProcessor, limitsModelCallsProcessor, spendShare } from "./limits/index.ts";
import type { ConfigView } from "./runner/config-table.ts";
import type { Endpoints } from "./runner/endpoints.ts";
import type { Processor } from "./runner/processor.ts";

export interface PipelineDeps {
  endpoints: Endpoints;
  redis: Redis;
  config: ConfigView;
  objects: ObjectStore;
}

export interface PipelineEntry<In = unknown, Env = unknown> {
  readonly processor: Processor<In, Env>;
  readonly env: (deps: PipelineDeps) => Env | Promise<Env>;
}

/** Helps type an entry whose environment type differs from its neighbours'. */
export function entry<In, Env>(processor: Processor<In, Env>, env: (deps: PipelineDeps) => Env | Promise<Env>): PipelineEntry {
  return { processor, env };
}

export const PIPELINE: PipelineEntry[] = [
  // FIT-16: the tree's spend share from the budget state (LIM-8), else the event's.
  entry(fillInProcessor, ({ config, redis }) => ({ config, spendShare: (tree: string) => spendShare(redis, new Keys(), tree) })),
  entry(limitsModelCallsProcessor, ({ redis, config }) => limitsEnv({ redis, config })),
  entry(limitsJobsProcessor, ({ redis, config }) => limitsEnv({ redis, config })),
  entry(fitResultsProcessor, ({ objects }) => ({ load: (r) => (r.content_ref ? objects.get(r.tenant, r.content_ref) : Promise.resolve(null)) })),
];
