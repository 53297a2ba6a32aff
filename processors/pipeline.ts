/**
 * The processors `npm start` runs, each with how to build the environment its core needs
 * from the shared connections. A processor joins the pipeline by being listed here.
 */
import type { RedisClient } from "../store/redis/client.ts";
import { FileNotFound } from "../store/file-errors.ts";
import type { FileStore } from "../store/files.ts";
import { Keys } from "../store/redis/keys.ts";
import { fillInProcessor } from "./fill-in/processor.ts";
import { fitResultsProcessor } from "./fit-results/processor.ts";
import { fileArgumentsEnv, filesState, keptThreshold } from "./files/env.ts";
import { filesJobsProcessor } from "./files-jobs/processor.ts";
import { loopApprovalsProcessor, loopCallsProcessor, loopEnv, loopResultsProcessor } from "./loops/index.ts";
import { limitsEnv, limitsJobsProcessor, limitsModelCallsProcessor, spendShare } from "./limits/index.ts";
import { SINKS } from "./sinks.ts";
import { redisStandingStore } from "./limits/standing.ts";
import { readResultEnv, readResultProcessor } from "./read-result/index.ts";
import type { PriceTable } from "./limits/prices.ts";
import type { ConfigView } from "./runner/config-table.ts";
import type { Endpoints } from "./runner/endpoints.ts";
import type { Processor } from "./runner/processor.ts";

export interface PipelineDeps {
  endpoints: Endpoints;
  redis: RedisClient;
  config: ConfigView;
  files: FileStore;
  /** What each model costs: the one table both limits processors price with. @default DEFAULT_PRICES */
  prices?: PriceTable;
}

function notFoundAsNull(err: unknown): null {
  if (err instanceof FileNotFound) return null;
  throw err;
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
  // FILE-1: file arguments resolved to paths when the call's tree (or an earlier turn, FILE-3) may read them.
  entry(fillInProcessor, ({ config, redis, files }) => ({ config, spendShare: (tenant: string, tree: string) => spendShare(redis, new Keys(), tenant, tree), files: fileArgumentsEnv(filesState(redis), files) })),
  entry(loopCallsProcessor, loopEnv),
  entry(loopResultsProcessor, loopEnv),
  entry(loopApprovalsProcessor, loopEnv),
  // LIM-7: both price with the same table (OZ0_PRICES, else the default; docs/limits.md "Prices").
  entry(limitsModelCallsProcessor, ({ redis, config, prices }) => limitsEnv({ redis, config, prices })),
  entry(limitsJobsProcessor, ({ redis, config, prices }) => limitsEnv({ redis, config, prices })),
  entry(fitResultsProcessor, ({ config, files, redis }) => {
    const state = filesState(redis);
    return {
      load: async (r) => (r.content_ref ? files.read(await state.reader(r.tenant, r.tree_id), r.content_ref).then((f) => f.bytes, notFoundAsNull) : null),
      // OFF-13: the threshold the job started with, kept in Redis.
      threshold: keptThreshold(state, config),
      storeFile: (owner, bytes, options) => files.store(owner, bytes, options),
      // FIT-8: the plugin manifests say which functions adopt the fit convention.
      config,
    };
  }),
  // FILE-3, FILE-4, FILE-5, OFF-13: trees, turns, files handed at a start, thresholds kept at a start.
  entry(filesJobsProcessor, ({ config, files, redis }) => ({ config, files, state: filesState(redis), standing: redisStandingStore(redis, new Keys()) })),
  // OFF-6..OFF-9: oz.read_result calls, answered from the file store.
  entry(readResultProcessor, ({ config, files, redis }) => readResultEnv({ config, files, redis, reader: (tenant, tree) => filesState(redis).reader(tenant, tree) })),
  // SYS-5: the trace and audit sinks write MinIO and emit nothing.
  ...SINKS,
];
