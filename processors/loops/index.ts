/**
 * The loop detector (LOOP-1..LOOP-9): three processors sharing a run's loop state in Redis,
 * and a timer that turns passed deadlines into answers. `topology/pipeline.ts` declares the
 * processors and the timer (`startLoopDeadlines`) as a punctuator of their application.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import type { Kafka } from "kafkajs";
import type { Serde } from "../../schemas/serde.ts";
import { Keys } from "../../store/redis/keys.ts";
import { redisStandingStore } from "../limits/redis-store.ts";
import type { StandingStore } from "../limits/store.ts";
import type { AgentDefinition } from "../../config/agent.ts";
import type { ConfigView } from "../runner/config-table.ts";
import type { Logger } from "../runner/log.ts";
import type { LoopEnv } from "./calls-processor.ts";
import { kafkaAnswers, startDeadlineTimer, type DeadlineTimer } from "./deadlines.ts";
import { RedisLoopStore } from "./redis-store.ts";
import type { LoopStore, TimerEntry } from "./store.ts";

export { loopApprovalsProcessor } from "./approvals-processor.ts";
export { loopCallsProcessor, type LoopEnv } from "./calls-processor.ts";
export { loopResultsProcessor } from "./results-processor.ts";
export { formatLoopReport, loopReport, toolFacts, type LoopingTool } from "./report.ts";
export { MemoryLoopStore } from "./memory-store.ts";
export { RedisLoopStore } from "./redis-store.ts";

const stores = new WeakMap<RedisClient, RedisLoopStore>();

/** One loop store per Redis connection, shared by the three processors. */
export function loopStore(redis: RedisClient, keys = new Keys()): RedisLoopStore {
  let store = stores.get(redis);
  if (!store) stores.set(redis, (store = new RedisLoopStore(redis, keys)));
  return store;
}

export interface LoopDeps {
  readonly redis: RedisClient;
  readonly config: ConfigView;
}

/** The environment of every loop processor, from the pipeline's shared connections. */
export function loopEnv({ redis, config }: LoopDeps): LoopEnv {
  return { config, store: loopStore(redis), standing: redisStandingStore(redis, new Keys()) };
}

/**
 * Starts the deadline timer (LOOP-5) beside the processors, with a producer of its own; `stop`
 * stops both. With `ended`, it also closes the approvals whose job ended (closing.ts), reading
 * each job's standing (and its agent's limits.timeout from `config`) every `everyMs`.
 */
export async function startLoopDeadlines(deps: {
  store: LoopStore & { watched?(): Promise<TimerEntry[]> };
  kafka: Kafka;
  serde: Serde;
  log: Logger;
  intervalMs?: number;
  ended?: { standing: Pick<StandingStore, "read">; config: ConfigView | null; everyMs?: number };
}): Promise<DeadlineTimer> {
  // Idempotent (acks from all in-sync replicas): a retried send after a lost acknowledgement is
  // not written twice.
  const producer = deps.kafka.producer({ allowAutoTopicCreation: false, idempotent: true });
  await producer.connect();
  const { store, ended } = deps;
  const watched = store.watched?.bind(store);
  if (ended && !watched) throw new Error("closing approvals with their job's end needs a loop store that lists what it watches (watched)");
  const config = ended?.config ?? null;
  const endedJobs =
    ended && watched
      ? { watched, standing: ended.standing, agentOf: config ? (name: string) => (name ? (config.get("agent", name) as AgentDefinition | undefined) : undefined) : null, everyMs: ended.everyMs }
      : undefined;
  const timer = startDeadlineTimer({ store, publish: kafkaAnswers(producer, deps.serde), log: deps.log.child({ component: "loop-deadlines" }), intervalMs: deps.intervalMs, ended: endedJobs });
  return {
    stop: async () => {
      await timer.stop();
      await producer.disconnect();
    },
  };
}
