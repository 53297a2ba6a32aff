/**
 * Commands grouped by slot, so what runs on one Redis runs unchanged on Redis Cluster: a
 * cluster refuses a pipeline whose keys live on several nodes, a command or script whose keys
 * live in several slots, and a SCAN only lists one node's keys.
 *
 * Keys of one hash tag share a slot (`keys.ts` gives every run, tree and tenant its own), so
 * grouping by hash tag is grouping by slot: two tags may share a slot, which costs a pipeline
 * more, never a wrong answer.
 */
import { Cluster, type Command, type Pipeline, type Redis } from "ioredis";
import { TransientError } from "../../lib/errors.ts";
import type { RedisClient } from "./client.ts";

/** One command of a pipeline: a Redis command by name, and the key it routes by. */
export interface SlotCommand {
  /** The command's first key: which slot, so which node, runs it. */
  readonly key: string;
  readonly name: string;
  readonly args: ReadonlyArray<string | number>;
  /** Builds the command sent in place of `name` and `args`: a script's call, which carries its text only the first time on a connection (`scripts.ts`). */
  readonly build?: () => Command;
}

/** A command's reply as a pipeline gives it: the error, or null and the value. */
export type Reply = [Error | null, unknown];

/** What decides a key's slot: the text inside its first non-empty `{...}`, else the whole key (as Redis Cluster hashes it). */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open < 0) return key;
  const close = key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/** The items grouped by their key's hash tag, in their order within each group. */
export function bySlot<T>(items: readonly T[], keyOf: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const tag = hashTag(keyOf(item));
    const group = groups.get(tag);
    if (group) group.push(item);
    else groups.set(tag, [item]);
  }
  return [...groups.values()];
}

type Queue = Record<string, ((...args: Array<string | number>) => unknown) | undefined>;

async function execPipeline(redis: RedisClient, commands: readonly SlotCommand[]): Promise<Reply[]> {
  // A pipeline, which is what `pipeline()` makes; its type says only the commands it chains.
  const pipe = redis.pipeline() as unknown as Pipeline;
  // ioredis adds a method per command to a pipeline; its type knows them only by name.
  const queue = pipe as unknown as Queue;
  for (const c of commands) {
    if (c.build) {
      pipe.sendCommand(c.build());
      continue;
    }
    const add = queue[c.name];
    if (!add) throw new Error(`no Redis command named ${c.name}`);
    add.call(pipe, ...c.args);
  }
  const replies = await pipe.exec();
  if (!replies) throw new TransientError(`Redis returned nothing for a pipeline of ${commands.length} commands; the batch is tried again`, { dependency: "redis" });
  return replies;
}

/**
 * Runs phases of commands, each phase after the one before has been answered, and gives every
 * reply in the order the commands were given. On one node every phase goes in one pipeline, in
 * order, as one round trip. On a cluster each phase's commands go in one pipeline a slot, the
 * slots at once; a phase whose replies hold an error ends the run there, so a later phase never
 * runs without the one it follows (the replies then stop after that phase's).
 */
export async function execBySlot(redis: RedisClient, phases: ReadonlyArray<readonly SlotCommand[]>): Promise<Reply[]> {
  if (!isCluster(redis)) return execPipeline(redis, phases.flat());
  const out: Reply[] = [];
  for (const phase of phases) {
    const indexed = phase.map((command, at) => ({ command, at }));
    const replies: Reply[] = new Array<Reply>(phase.length);
    await Promise.all(
      bySlot(indexed, (c) => c.command.key).map(async (group) => {
        const got = await execPipeline(redis, group.map((c) => c.command));
        group.forEach((c, i) => (replies[c.at] = got[i] ?? [new Error(`Redis returned no reply for ${c.command.name} on ${c.command.key}`), null]));
      }),
    );
    out.push(...replies);
    if (replies.some(([err]) => err !== null)) break;
  }
  return out;
}

/** The connections of every master: a cluster's masters, or the one node. For what each server does on its own (SCAN, INFO, CONFIG, SCRIPT). */
export function masterNodes(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes("master") : [redis];
}

/** Every key matching a pattern with the node that holds it (each master of a cluster), in batches as SCAN gives them. */
export async function* scanNodes(redis: RedisClient, match: string, count = 500): AsyncGenerator<{ node: Redis; keys: string[] }> {
  for (const node of masterNodes(redis)) {
    for await (const keys of node.scanStream({ match, count }) as AsyncIterable<string[]>) {
      if (keys.length > 0) yield { node, keys };
    }
  }
}

/** Every key matching a pattern, on every master of a cluster, in batches as SCAN gives them. */
export async function* scanKeys(redis: RedisClient, match: string, count = 500): AsyncGenerator<string[]> {
  for await (const { keys } of scanNodes(redis, match, count)) yield keys;
}

/** Deletes keys, one DEL a slot (a cluster refuses a DEL across slots); gives how many existed. */
export async function deleteKeys(redis: RedisClient, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const groups = isCluster(redis) ? bySlot(keys, (k) => k) : [[...keys]];
  const counts = await Promise.all(groups.map((group) => redis.del(...group)));
  return counts.reduce((a, b) => a + b, 0);
}
