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
import { LRUCache } from "lru-cache";
import { readFileDoc, type ReadFile, type ReadResultEnv } from "./processor.ts";
import { wholeFromEnv } from "../runner/settings.ts";
import { redisStandingStore } from "../limits/redis-store.ts";
import { RedisJobLabelsStore } from "./redis-store.ts";

export { parseRange, readArguments, type ReadArguments } from "./arguments.ts";
export { jobAgents, labelsAboveClearance, listsPluginTool, offersReadResult, type AgentLookup } from "./offered.ts";
export { READ_SECTION, readFileDoc, readResult, readResultProcessor, type ReadFile, type ReadOutcome, type ReadResultEnv } from "./processor.ts";
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
  /** Results kept read for the next read of the same ref (`readResultCacheFromEnv`); left out, the defaults there. */
  readonly kept?: ReadResultCache;
}

/**
 * How many results a pipeline keeps read: an agent reads a stored result a part at a time, and
 * reading its text into a document (counting every line) is most of a read's work. Each read
 * still asks the store for the reader's grant; a result kept answers without its bytes fetched
 * or read again. Bounded by size and by age, so bytes erased elsewhere leave memory soon after.
 */
export interface ReadResultCache {
  /** Megabytes of read results kept (their text, twice its length in bytes, and its index); 0 keeps none. @default 64 */
  readonly megabytes: number;
  /** Seconds one is kept after it was read into memory. @default 600 */
  readonly seconds: number;
}

export const READ_RESULT_CACHE: ReadResultCache = { megabytes: 64, seconds: 600 };

/** `OZ0_READ_CACHE_MB` and `OZ0_READ_CACHE_SECONDS`. */
export function readResultCacheFromEnv(env: Record<string, string | undefined> = process.env): ReadResultCache {
  return {
    megabytes: wholeFromEnv(env, "OZ0_READ_CACHE_MB", READ_RESULT_CACHE.megabytes, 0, 4096, "megabytes"),
    seconds: wholeFromEnv(env, "OZ0_READ_CACHE_SECONDS", READ_RESULT_CACHE.seconds, 1, 86_400, "seconds"),
  };
}

/** What a read result takes in memory, about: its text (two bytes a character), its line index and its parts. */
function footprint(file: ReadFile): number {
  return 2 * file.doc.text.length + file.doc.starts.byteLength + 256 * file.doc.parts.length + 1;
}

export function readResultEnv({ config, files, redis, keys = new Keys(), reader, kept = READ_RESULT_CACHE }: ReadResultDeps): ReadResultEnv {
  const labels = new RedisJobLabelsStore(redis, keys);
  // By tenant and ref: a ref names its bytes, so what was read of it holds for every reader the grant lets in.
  const read = kept.megabytes > 0 ? new LRUCache<string, ReadFile>({ maxSize: kept.megabytes * 1024 * 1024, sizeCalculation: footprint, ttl: kept.seconds * 1000 }) : null;
  return {
    config,
    readFile: async (owner, ref) => {
      const who = reader ? await reader(owner.tenant, owner.tree) : owner;
      const key = `${owner.tenant}\u0000${ref}`;
      try {
        const known = read?.get(key);
        if (known) {
          const granted = await files.granted(who, ref);
          return { size: known.size, labels: granted.labels, doc: known.doc };
        }
        const f = await files.read(who, ref);
        const file: ReadFile = { size: f.size, labels: f.labels, doc: readFileDoc(f.bytes) };
        read?.set(key, file);
        return file;
      } catch (err) {
        if (err instanceof FileNotFound) return null;
        throw err;
      }
    },
    joinLabels: (job, joining) => labels.join(job, joining),
    standing: redisStandingStore(redis, keys),
  };
}
