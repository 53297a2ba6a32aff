/**
 * The runner's CPU per event, without Kafka: `runner-identity` (decode, emit unchanged,
 * re-encode) beside a processor over real Redis, on the same events: `loop-calls` on tool
 * calls (`--input calls`, the default), or `limits-model-calls` on model calls (`--input models`).
 *
 *   npx tsx bench/runner-cpu.ts [--input calls|models] [--events 20000] [--batch 2500] [--partitions 8] [--concurrency 4] [--rounds 5] [--only identity|processor] [--on redis|cluster|both] [--memory]
 *
 * The events of `bench/pipeline/events.ts` are encoded once, then handed to the real
 * runner (`startProcessor`) through a Transport stand-in that calls its handler directly with
 * batches per partition (keys hashed to partitions, up to --batch records a batch, --concurrency
 * partitions at once, as `KafkaTransport` hands them) and groups each batch's outputs by topic
 * as it does before a send. Each round of the processor writes under a fresh Redis key prefix,
 * `benchcpu_<uid>_<round>`, so every round decides the same calls from an empty state; every
 * key under `benchcpu_<uid>_*` is deleted at the end. A warm-up round of each comes first.
 *
 * `--only` runs one subject (for a CPU profile of it: `node --cpu-prof --import tsx bench/runner-cpu.ts --only processor`).
 *
 * `--on` says where the processor's Redis state goes: `redis` (OZ0_REDIS_URL, the default),
 * `cluster` (the Redis Cluster of OZ0_REDIS_CLUSTER_URL, else the local stack's, `stack/up.sh
 * --redis-cluster`), or `both`, the processor then taking its turn on each in every round, so
 * one node and the cluster are measured side by side in one run. `--memory` adds the Redis
 * bytes the warm-up round left (MEMORY USAGE of every key), by hash tag: per run, per tree,
 * per tenant and in the shared `{loops}` and `{loopstats}` tags.
 *
 * Reported per subject: wall and CPU (user + system) microseconds per event, the median of the
 * rounds, and the ratio of the two subjects' medians. Event timestamps are fixed, so the
 * digests printed (of the output bytes, and of the processor's Redis state without its prefix)
 * are the same from run to run and from build to build while no decision changes.
 */
import { createHash, randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { limitsEnv, limitsModelCallsProcessor } from "../processors/limits/index.ts";
import { loopCallsProcessor, RedisLoopStore } from "../processors/loops/index.ts";
import { staticConfig } from "../processors/runner/config-table.ts";
import { endpointsFromEnv, PIPELINE_REDIS } from "../processors/runner/endpoints.ts";
import { createLogger } from "../processors/runner/log.ts";
import type { Processor } from "../processors/runner/processor.ts";
import { startProcessor } from "../processors/runner/runner.ts";
import { chunks, MAX_SEND_BYTES, topicMessages, type BatchHandler, type OutMessage, type RawRecord, type Transport } from "../processors/runner/transport.ts";
import { Serde } from "../schemas/serde.ts";
import { localStackEnv } from "../topology/stack.ts";
import { isRedisCluster, redisClient, redisWhere, type RedisClient, type RedisEndpoint } from "../store/redis/client.ts";
import { Keys } from "../store/redis/keys.ts";
import { BENCH_AGENTS, modelCalls, toolCalls, type EventKind } from "./pipeline/events.ts";
import { identityProcessor } from "./pipeline/subjects.ts";
import { deleteKeys, hashTag, scanKeys, scanNodes } from "../store/redis/slots.ts";

const { values } = parseArgs({
  options: {
    input: { type: "string", default: "calls" },
    events: { type: "string", default: "20000" },
    batch: { type: "string", default: "2500" },
    partitions: { type: "string", default: "8" },
    concurrency: { type: "string", default: "4" },
    rounds: { type: "string", default: "5" },
    only: { type: "string", default: "" },
    on: { type: "string", default: "redis" },
    memory: { type: "boolean", default: false },
  },
});
const N = Number(values.events);
const BATCH = Number(values.batch);
const PARTITIONS = Number(values.partitions);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds);
const ONLY = values.only;
if (![N, BATCH, PARTITIONS, CONCURRENCY, ROUNDS].every((n) => Number.isInteger(n) && n > 0) || !["", "identity", "processor"].includes(ONLY) || !["calls", "models"].includes(values.input) || !["redis", "cluster", "both"].includes(values.on)) {
  process.stderr.write("usage: npx tsx bench/runner-cpu.ts [--input calls|models] [--events N>0] [--batch N>0] [--partitions N>0] [--concurrency N>0] [--rounds N>0] [--only identity|processor] [--on redis|cluster|both] [--memory]\n");
  process.exit(2);
}

process.env.OZ0_LOG_LEVEL ??= "warn";
const log = createLogger({ component: "bench-runner-cpu" });
const say = (line: string): void => void process.stderr.write(`${line}\n`);

const MODELS = values.input === "models";
const KIND: EventKind<{ id: string; ts: number }> = MODELS ? modelCalls : toolCalls;
const INPUT = KIND.topic;
const SCHEMA = KIND.schema;
const LABEL = MODELS ? "limits-model-calls" : "loop-calls";
/** A fixed clock for the events, so outputs and state are the same bytes in every run. */
const EPOCH = Date.UTC(2026, 0, 5, 12);

/** Batches of one partition, in offset order. */
type Partitioned = RawRecord[][][];

function partitionOf(key: string): number {
  return createHash("sha1").update(key).digest().readUInt32BE(0) % PARTITIONS;
}

function batches(encoded: ReadonlyArray<{ key: string; value: Buffer }>): Partitioned {
  const parts: RawRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const e of encoded) {
    const partition = partitionOf(e.key);
    const list = parts[partition] as RawRecord[];
    list.push({ topic: INPUT, partition, offset: String(list.length), key: Buffer.from(e.key), value: e.value, timestamp: String(EPOCH) });
  }
  return parts.map((list) => Array.from({ length: Math.ceil(list.length / BATCH) }, (_, i) => list.slice(i * BATCH, (i + 1) * BATCH)));
}

/**
 * Hands batches straight to the runner's handler, as KafkaTransport would after a fetch, and
 * does what it does with the outputs short of sending them: chunks by size, grouped by topic.
 */
class DirectTransport implements Transport {
  private handler: BatchHandler | undefined;
  digest = createHash("sha256");
  outputs = 0;

  start(handler: BatchHandler): Promise<void> {
    this.handler = handler;
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  async feed(parts: Partitioned): Promise<void> {
    const handler = this.handler;
    if (!handler) throw new Error("the transport was not started");
    const results: OutMessage[][][] = parts.map(() => []);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let p = next++; p < parts.length; p = next++) {
        for (const batch of parts[p] ?? []) {
          const committed: Array<() => void> = [];
          const out = await handler(batch, { heartbeat: () => Promise.resolve(), isRunning: () => true, afterCommit: (fn) => void committed.push(fn) });
          for (const chunk of chunks(out, MAX_SEND_BYTES)) topicMessages(chunk);
          for (const fn of committed) fn();
          results[p]?.push(out);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    // Digested after the timing window, in partition order, so concurrency does not reorder it.
    for (const part of results) {
      for (const out of part) {
        for (const m of out) {
          this.outputs++;
          this.digest.update(`${m.topic}\u0000${m.key ?? ""}\u0000`).update(m.value ?? Buffer.alloc(0));
        }
      }
    }
  }
}

interface Sample {
  readonly wallUs: number;
  readonly cpuUs: number;
  readonly outputs: number;
  readonly digest: string;
}

const endpoints = endpointsFromEnv();
const uid = randomUUID().slice(0, 8);
const serde = new Serde({ registryUrl: endpoints.registryUrl });
const config = staticConfig(BENCH_AGENTS.map((a) => ({ kind: "agent" as const, id: a.name, value: a })));

/** Where the processor's state goes: one Redis a target, named for the table. */
interface Target {
  readonly key: string;
  readonly label: string;
  readonly redis: RedisClient;
}

function target(key: string, endpoint: RedisEndpoint): Target {
  return { key, label: `${LABEL} on ${isRedisCluster(endpoint) ? "a Redis Cluster" : "one Redis"} (${redisWhere(endpoint)})`, redis: redisClient(endpoint, PIPELINE_REDIS) };
}

const clusterEndpoint = (): RedisEndpoint => ({ ...endpoints, redisUrl: process.env.OZ0_REDIS_CLUSTER_URL ?? localStackEnv().OZ0_REDIS_CLUSTER_URL ?? "", redisCluster: true });
const TARGETS: Target[] = [...(values.on !== "cluster" ? [target("redis", endpoints)] : []), ...(values.on !== "redis" ? [target("cluster", clusterEndpoint())] : [])];
const prefixOf = (t: Target, round: number): string => `benchcpu_${uid}_${t.key}_${round}`;

async function round<Env>(processor: Processor<unknown, Env>, env: Env, parts: Partitioned): Promise<Sample> {
  const transport = new DirectTransport();
  const running = await startProcessor(processor, env, { transport, serde, log });
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await transport.feed(parts);
  const cpu = process.cpuUsage(c0);
  const wall = performance.now() - t0;
  await running.stop();
  if (running.stats.deadLetters > 0) throw new Error(`${processor.name} dead-lettered ${running.stats.deadLetters} of the bench's inputs: the bench's events should all be valid`);
  return { wallUs: (wall * 1000) / N, cpuUs: (cpu.user + cpu.system) / N, outputs: transport.outputs, digest: transport.digest.digest("hex").slice(0, 16) };
}

/**
 * Every key's kind and value under the round's prefix, TTLs left out. A key counts by what
 * follows its hash tag (`:loop:calls`), not by its run's name, so the digest stays comparable
 * when the way a run's keys are named changes; the states themselves tell the runs apart.
 */
async function stateDigest(redis: RedisClient, prefix: string): Promise<{ keys: number; digest: string; byTag: string }> {
  const found: string[] = [];
  for await (const batch of scanKeys(redis, `${prefix}:*`, 1000)) found.push(...batch);
  const entries: Array<{ kind: string; entry: string }> = [];
  for (const key of found) {
    const type = await redis.type(key);
    // Contents in a fixed order: a set's or a hash's own order (and DUMP) follows insertion, which concurrency varies.
    const content =
      type === "hash"
        ? Object.entries(await redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        : type === "set"
          ? (await redis.smembers(key)).sort()
          : type === "zset"
            ? await redis.zrange(key, 0, -1, "WITHSCORES")
            : type === "string"
              ? await redis.get(key)
              : type === "list"
                ? await redis.lrange(key, 0, -1)
                : `(a ${type})`;
    entries.push({ kind: tagKind(key), entry: `${key.slice(key.lastIndexOf("}") + 1)}\u0000${type}\u0000${JSON.stringify(content)}\n` });
  }
  const digest = (list: readonly string[]): string => {
    const h = createHash("sha256");
    for (const e of [...list].sort()) h.update(e);
    return h.digest("hex").slice(0, 16);
  };
  // A digest per kind of hash tag too, so a state that differs says where.
  const kinds = [...new Set(entries.map((e) => e.kind))].sort();
  const byTag = kinds.map((k) => `${k} ${digest(entries.filter((e) => e.kind === k).map((e) => e.entry))}`).join(", ");
  return { keys: found.length, digest: digest(entries.map((e) => e.entry)), byTag };
}

async function cleanup(): Promise<number> {
  let removed = 0;
  for (const { redis } of TARGETS) {
    for await (const batch of scanKeys(redis, `benchcpu_${uid}_*`, 1000)) removed += await deleteKeys(redis, batch);
  }
  return removed;
}

/** The kind of a key's hash tag: `run`, `tree`, `tenant`, `loops`, ... */
function tagKind(key: string): string {
  const tag = hashTag(key);
  return tag === key ? "(no tag)" : (tag.split(":")[0] ?? tag);
}

/** Bytes of Redis state by hash tag kind (`run`, `tree`, `tenant`, `loops`, ...): tags, keys, bytes, and the biggest tag. */
interface Footprint {
  readonly kinds: Map<string, { tags: Set<string>; keys: number; bytes: number }>;
  readonly biggest: { tag: string; bytes: number };
}

/** MEMORY USAGE (every field counted: SAMPLES 0) of each key under a prefix, by its hash tag. */
async function footprint(redis: RedisClient, prefix: string): Promise<Footprint> {
  const kinds = new Map<string, { tags: Set<string>; keys: number; bytes: number }>();
  const byTag = new Map<string, number>();
  // MEMORY USAGE goes to the node that holds the key: ioredis' Cluster does not route it by key.
  for await (const { node, keys: batch } of scanNodes(redis, `${prefix}:*`, 1000)) {
    const sizes = await Promise.all(batch.map((key) => node.memory("USAGE", key, "SAMPLES", 0)));
    batch.forEach((key, i) => {
      const tag = hashTag(key);
      const kind = tagKind(key);
      const bytes = sizes[i] ?? 0;
      const k = kinds.get(kind) ?? { tags: new Set<string>(), keys: 0, bytes: 0 };
      k.tags.add(tag);
      k.keys++;
      k.bytes += bytes;
      kinds.set(kind, k);
      byTag.set(tag, (byTag.get(tag) ?? 0) + bytes);
    });
  }
  let biggest = { tag: "-", bytes: 0 };
  for (const [tag, bytes] of byTag) if (bytes > biggest.bytes) biggest = { tag, bytes };
  return { kinds, biggest };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

const identity = identityProcessor<unknown>(INPUT);
/** A subject of the table: runner-identity, or the processor on one target. */
interface Subject {
  readonly key: string;
  readonly label: string;
  readonly target?: Target;
}
const SUBJECTS: Subject[] = [...(ONLY !== "processor" ? [{ key: "identity", label: "runner-identity" }] : []), ...(ONLY !== "identity" ? TARGETS.map((t) => ({ key: t.key, label: t.label, target: t })) : [])];
const samples = new Map<string, Sample[]>(SUBJECTS.map((s) => [s.key, []]));
const states = new Map<string, { keys: number; digest: string; byTag: string }>();
const footprints = new Map<string, Footprint>();

function processorRound(t: Target, r: number, parts: Partitioned): Promise<Sample> {
  const keys = new Keys(prefixOf(t, r));
  if (MODELS) return round(limitsModelCallsProcessor as Processor<unknown, ReturnType<typeof limitsEnv>>, limitsEnv({ redis: t.redis, config, keys }), parts);
  return round(loopCallsProcessor as Processor<unknown, { config: typeof config; store: RedisLoopStore }>, { config, store: new RedisLoopStore(t.redis, keys) }, parts);
}

try {
  await serde.registerAll();
  const events = KIND.make(N, "cpu", 1).map((e, i) => ({ key: e.key, value: serde.encode(SCHEMA, { ...e.value, ts: EPOCH + i }) }));
  const parts = batches(events);
  say(`bench ${uid}: ${N} ${MODELS ? "model calls" : "tool calls"} in ${parts.flat().length} batches over ${PARTITIONS} partitions, ${CONCURRENCY} at once; warm-up, then ${ROUNDS} rounds`);
  // The subjects take turns, round by round, so a change in the machine's load touches each.
  for (let r = 0; r <= ROUNDS; r++) {
    const line: string[] = [];
    for (const s of SUBJECTS) {
      const sample = s.target === undefined ? await round(identity, undefined, parts) : await processorRound(s.target, r, parts);
      if (s.target !== undefined && r === 0) {
        states.set(s.key, await stateDigest(s.target.redis, prefixOf(s.target, r)));
        if (values.memory) footprints.set(s.key, await footprint(s.target.redis, prefixOf(s.target, r)));
      }
      samples.get(s.key)?.push(sample);
      line.push(`${s.label} ${sample.wallUs.toFixed(1)} µs/event (cpu ${sample.cpuUs.toFixed(1)})`);
    }
    say(`${r === 0 ? "warm-up" : `round ${r}`}: ${line.join(", ")}`);
  }
} finally {
  const removed = await cleanup().catch((err: unknown) => (say(`cleanup failed: ${String(err)}; delete benchcpu_${uid}_* by hand`), 0));
  say(`cleaned up: ${removed} Redis keys under benchcpu_${uid}_*`);
  for (const t of TARGETS) t.redis.disconnect();
}

for (const s of SUBJECTS) {
  const digests = new Set((samples.get(s.key) ?? []).map((x) => `${x.outputs}/${x.digest}`));
  if (digests.size !== 1) throw new Error(`${s.label} wrote different outputs in different rounds: ${[...digests].join(", ")}`);
}
/** The warm-up round is left out of the medians. */
const timed = (key: string): Sample[] => (samples.get(key) ?? []).slice(1);
const med = (key: string, of: (s: Sample) => number): number => median(timed(key).map(of));
const first = (key: string): Sample | undefined => samples.get(key)?.[0];
const lines = [
  `runner CPU per event: ${N} ${MODELS ? "model calls" : "tool calls"}, batches of up to ${BATCH} per partition, ${PARTITIONS} partitions, ${CONCURRENCY} at once; median of ${ROUNDS} rounds; Node ${process.version}`,
  "",
  "| subject | wall µs/event | cpu µs/event | outputs | outputs digest |",
  "| --- | ---: | ---: | ---: | --- |",
  ...SUBJECTS.map((s) => `| ${s.label} | ${med(s.key, (x) => x.wallUs).toFixed(1)} | ${med(s.key, (x) => x.cpuUs).toFixed(1)} | ${first(s.key)?.outputs ?? 0} | ${first(s.key)?.digest ?? "-"} |`),
  "",
];
const processors = SUBJECTS.filter((s) => s.target !== undefined);
if (samples.has("identity")) {
  for (const s of processors) {
    const wall = med(s.key, (x) => x.wallUs) / med("identity", (x) => x.wallUs);
    const cpu = med(s.key, (x) => x.cpuUs) / med("identity", (x) => x.cpuUs);
    lines.push(`${s.label} per event costs ${wall.toFixed(2)}x runner-identity's wall time (${cpu.toFixed(2)}x its CPU): it runs at ${(1 / wall).toFixed(2)} of runner-identity's rate.`);
  }
}
if (samples.has("redis") && samples.has("cluster")) {
  lines.push(`On the cluster ${LABEL} takes ${(med("cluster", (x) => x.wallUs) / med("redis", (x) => x.wallUs)).toFixed(2)}x the wall time an event it takes on one node (${(med("cluster", (x) => x.cpuUs) / med("redis", (x) => x.cpuUs)).toFixed(2)}x the CPU).`);
}
for (const s of processors) {
  const st = states.get(s.key);
  if (st) lines.push(`${s.label} Redis state: ${st.keys} keys, digest ${st.digest} (by hash tag: ${st.byTag})`);
}
for (const s of processors) {
  const f = footprints.get(s.key);
  if (!f) continue;
  lines.push("", `Redis bytes after the warm-up round, ${s.label} (MEMORY USAGE, SAMPLES 0):`, "", "| hash tag | tags | keys | bytes | bytes per tag |", "| --- | ---: | ---: | ---: | ---: |");
  for (const [kind, k] of [...f.kinds].sort(([a], [b]) => (a < b ? -1 : 1))) lines.push(`| ${kind} | ${k.tags.size} | ${k.keys} | ${k.bytes} | ${Math.round(k.bytes / k.tags.size)} |`);
  lines.push("", `The biggest tag: ${f.biggest.tag} with ${f.biggest.bytes} bytes.`);
}
process.stdout.write(`${lines.join("\n")}\n`);
