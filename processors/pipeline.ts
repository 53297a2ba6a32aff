/**
 * The processors `npm start` runs, each with how to build the environment its core needs
 * from the shared connections. A processor joins the pipeline by being listed here.
 */
import type { Redis } from "ioredis";
import type { AgentDefinition } from "../config/agent.ts";
import { resolveOffloadThreshold } from "../config/resolve.ts";
import type { TenantSettings } from "../config/tenant.ts";
import { FileNotFound } from "../store/file-errors.ts";
import type { FileStore } from "../store/files.ts";
import { Keys } from "../store/redis/keys.ts";
import { fillInProcessor } from "./fill-in/processor.ts";
import { fitResultsProcessor } from "./fit-results/processor.ts";
import { loopApprovalsProcessor, loopCallsProcessor, loopEnv, loopResultsProcessor } from "./loops/index.ts";
import { limitsEnv, limitsJobsProcessor, limitsModelCallsProcessor, spendShare } from "./limits/index.ts";
import type { ConfigView } from "./runner/config-table.ts";
import type { Endpoints } from "./runner/endpoints.ts";
import type { Processor } from "./runner/processor.ts";

export interface PipelineDeps {
  endpoints: Endpoints;
  redis: Redis;
  config: ConfigView;
  files: FileStore;
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
  entry(fillInProcessor, ({ config, redis }) => ({ config, spendShare: (tree: string) => spendShare(redis, new Keys(), tree) })),
  entry(loopCallsProcessor, loopEnv),
  entry(loopResultsProcessor, loopEnv),
  entry(loopApprovalsProcessor, loopEnv),
  entry(limitsModelCallsProcessor, ({ redis, config }) => limitsEnv({ redis, config })),
  entry(limitsJobsProcessor, ({ redis, config }) => limitsEnv({ redis, config })),
  entry(fitResultsProcessor, ({ config, files }) => ({
    load: (r) => (r.content_ref ? files.read({ tenant: r.tenant, tree: r.tree_id }, r.content_ref).then((f) => f.bytes, notFoundAsNull) : Promise.resolve(null)),
    // OFF-13 from the current settings; not yet kept from the job's start.
    threshold: (r) => resolveOffloadThreshold(config.get("agent", r.agent) as AgentDefinition | undefined, config.get("tenant", r.tenant) as TenantSettings | undefined),
    storeFile: (owner, bytes, options) => files.store(owner, bytes, options),
  })),
];
