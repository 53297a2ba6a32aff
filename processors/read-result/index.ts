/**
 * oz.read_result (OFF-6..OFF-9): the processor, the pure decisions runtimes share, and the
 * environment the pipeline builds from its connections (the file store, Redis, the config table);
 * the labels jobs join, behind `JobLabelsStore` (`store.ts`, `memory-store.ts`, `redis-store.ts`).
 */
import type { RedisClient } from "../../store/redis/client.ts";
import { FileNotFound } from "../../store/file-errors.ts";
import type { FileReader, FileStore } from "../../store/files.ts";
import { Keys } from "../../store/redis/keys.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { ReadResultEnv } from "./processor.ts";
import { redisStandingStore } from "../limits/redis-store.ts";
import { RedisJobLabelsStore } from "./redis-store.ts";

export { parseRange, readArguments, type ReadArguments } from "./arguments.ts";
export { jobAgents, labelsAboveClearance, listsPluginTool, offersReadResult, type AgentLookup } from "./offered.ts";
export { READ_SECTION, readResult, readResultProcessor, type ReadOutcome, type ReadResultEnv } from "./processor.ts";
export { MemoryJobLabelsStore } from "./memory-store.ts";
export { JOB_LABELS_TTL_SECONDS, jobLabels, joinJobLabels, joinJobLabelsScript, RedisJobLabelsStore } from "./redis-store.ts";
export type { JobLabelsStore, JobRef } from "./store.ts";
export { builtinManifest, isBuiltinTool, isReadResult, OZ_MANIFEST, READ_RESULT, READ_RESULT_INPUT_SCHEMA, READ_RESULT_NAME } from "./tool.ts";

export interface ReadResultDeps {
  readonly config: ConfigView;
  readonly files: FileStore;
  readonly redis: RedisClient;
  readonly keys?: Keys;
  /**
   * FILE-3: the call's tree as a reader, with the earlier turns of its conversation. Left out,
   * the tree alone.
   */
  readonly reader?: (tenant: string, tree: string) => Promise<FileReader>;
}

export function readResultEnv({ config, files, redis, keys = new Keys(), reader }: ReadResultDeps): ReadResultEnv {
  const labels = new RedisJobLabelsStore(redis, keys);
  return {
    config,
    readFile: async (owner, ref) =>
      files.read(reader ? await reader(owner.tenant, owner.tree) : owner, ref).then(
        (f) => ({ bytes: f.bytes, labels: f.labels }),
        (err: unknown) => {
          if (err instanceof FileNotFound) return null;
          throw err;
        },
      ),
    joinLabels: (job, joining) => labels.join(job, joining),
    standing: redisStandingStore(redis, keys),
  };
}
