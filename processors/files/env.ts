/**
 * How the pipeline builds what the file rules need from its shared connections: the Redis
 * state of trees, turns and thresholds, and the file store.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { AgentDefinition } from "../../config/agent.ts";
import { resolveOffloadThreshold, type OffloadThreshold } from "../../config/resolve.ts";
import type { TenantSettings } from "../../config/tenant.ts";
import type { FileStore } from "../../store/files.ts";
import { Keys } from "../../store/redis/keys.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { FileArgumentsEnv } from "./arguments.ts";
import { RedisFilesStore } from "./redis-store.ts";
import type { FilesStore } from "./store.ts";

export function filesState(redis: RedisClient, keys: Keys = new Keys()): FilesStore {
  return new RedisFilesStore(redis, keys);
}

/** FILE-1, FILE-3: a call's tree reads as itself and its earlier turns. */
export function fileArgumentsEnv(state: FilesStore, files: Pick<FileStore, "readable">): FileArgumentsEnv {
  return { reader: (tenant, tree) => state.reader(tenant, tree), readable: (reader, ref) => files.readable(reader, ref) };
}

/**
 * OFF-13: the threshold a job started with. Kept at its start by files-jobs, or here at its
 * first result when that comes first; later settings never change it.
 */
export function keptThreshold(state: FilesStore, config: ConfigView): (job: { tenant: string; tree_id: string; job_id: string; agent: string }) => Promise<OffloadThreshold> {
  return (job) => {
    const resolved = resolveOffloadThreshold(config.get("agent", job.agent) as AgentDefinition | undefined, config.get("tenant", job.tenant) as TenantSettings | undefined);
    return state.threshold(job.tenant, job.tree_id, job.job_id, resolved);
  };
}
