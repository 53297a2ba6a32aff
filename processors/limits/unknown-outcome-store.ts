/**
 * LIM-11: where unknown outcomes waiting for a person are kept (`unknown-outcomes.ts`): one hash
 * per approval (its request, and its answer once given) and an index of those waiting by
 * deadline, both in the `{outcomes}` slot, so answering and leaving the index are one step.
 * Redis (the scripts unknownOutcomePut and unknownOutcomeAnswer) and memory behave the same.
 */
import type { RedisClient } from "../../store/redis/client.ts";
import { redisFailure } from "../../store/redis/errors.ts";
import type { Keys } from "../../store/redis/keys.ts";
import { defineScript, ignored } from "../../store/redis/script.ts";
import type { UnknownOutcomeAnswer, UnknownOutcomeRequest } from "./unknown-outcomes.ts";

export interface UnknownOutcomeStore {
  /** Keeps a request once and puts it in the index by its deadline; a replay changes nothing. */
  put(r: UnknownOutcomeRequest, now: number): Promise<void>;
  /** Those nobody answered yet, soonest deadline first. */
  waiting(): Promise<UnknownOutcomeRequest[]>;
  /** Those in the index whose deadline passed by `now` (answered by the deadline and not yet published, too), soonest first, at most `limit`. */
  due(now: number, limit: number): Promise<Array<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }>>;
  /** One request and how it was answered (null while it waits); null when none is kept. */
  get(approval: string): Promise<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null } | null>;
  /**
   * Answers once: returns the answer that holds (this one, or the first); null when no such
   * request is kept. `leave` takes it out of the index at once (a person's answer); the timer
   * leaves it in until its decision is published (`done`).
   */
  answer(approval: string, a: UnknownOutcomeAnswer, leave: boolean): Promise<UnknownOutcomeAnswer | null>;
  /** Takes it out of the index of those waiting. */
  done(approval: string): Promise<void>;
}

/** A request is kept this long past its deadline, so its answer is still read. */
const KEPT_PAST_DEADLINE_SECONDS = 7 * 24 * 3600;

/** Keeps an unknown outcome's request and puts it in the index of those waiting, by deadline. */
export const unknownOutcomePut = defineScript({
  name: "unknownOutcomePut",
  keys: (k, i: { readonly request: UnknownOutcomeRequest; readonly ttl: number }) => [k.unknownOutcome(i.request.approval), k.unknownOutcomes()],
  args: (i) => [JSON.stringify(i.request), i.request.deadline, i.request.approval, i.ttl],
  reply: ignored,
  what: (i) => `keeping unknown outcome ${i.request.approval} of job ${i.request.job_id}`,
});

/** Answers an unknown outcome once: the answer that holds, or null when no such request is kept. */
export const unknownOutcomeAnswer = defineScript({
  name: "unknownOutcomeAnswer",
  keys: (k, i: { readonly approval: string; readonly answer: UnknownOutcomeAnswer; readonly leave: boolean }) => [k.unknownOutcome(i.approval), k.unknownOutcomes()],
  args: (i) => [i.approval, JSON.stringify(i.answer), i.leave ? 1 : 0],
  reply: (raw, fail) => {
    if (typeof raw !== "string") fail('the answer (JSON) or ""');
    return raw === "" ? null : (JSON.parse(raw as string) as UnknownOutcomeAnswer);
  },
  what: (i) => `answering unknown outcome ${i.approval}`,
});

export function redisUnknownOutcomeStore(redis: RedisClient, keys: Keys): UnknownOutcomeStore {
  async function guarded<T>(what: string, key: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      throw redisFailure(err, what, key);
    }
  }
  const parse = (text: string | null | undefined): UnknownOutcomeRequest | null => (text ? (JSON.parse(text) as UnknownOutcomeRequest) : null);
  const requests = async (approvals: readonly string[]): Promise<UnknownOutcomeRequest[]> => {
    const read = await Promise.all(approvals.map((a) => redis.hmget(keys.unknownOutcome(a), "request", "answer")));
    const out: UnknownOutcomeRequest[] = [];
    const gone: string[] = [];
    read.forEach(([request, answer], i) => {
      const r = parse(request);
      // Answered, or expired: it waits no more.
      if (r && !answer) out.push(r);
      else gone.push(approvals[i] as string);
    });
    if (gone.length > 0) await redis.zrem(keys.unknownOutcomes(), ...gone);
    return out;
  };
  return {
    put: (r, now) =>
      unknownOutcomePut.run(redis, keys, { request: r, ttl: Math.max(1, Math.ceil((r.deadline - now) / 1000)) + KEPT_PAST_DEADLINE_SECONDS }),
    waiting: () => guarded("reading the unknown outcomes waiting", keys.unknownOutcomes(), async () => requests(await redis.zrange(keys.unknownOutcomes(), 0, -1))),
    due: (now, limit) =>
      guarded("reading the unknown outcomes past their deadline", keys.unknownOutcomes(), async () => {
        const approvals = await redis.zrangebyscore(keys.unknownOutcomes(), "-inf", now, "LIMIT", 0, limit);
        const read = await Promise.all(approvals.map((a) => redis.hmget(keys.unknownOutcome(a), "request", "answer")));
        const out: Array<{ request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }> = [];
        const gone: string[] = [];
        read.forEach(([request, answer], i) => {
          const r = parse(request);
          if (r) out.push({ request: r, answered: answer ? (JSON.parse(answer) as UnknownOutcomeAnswer) : null });
          else gone.push(approvals[i] as string);
        });
        if (gone.length > 0) await redis.zrem(keys.unknownOutcomes(), ...gone);
        return out;
      }),
    get: (approval) =>
      guarded(`reading unknown outcome ${approval}`, keys.unknownOutcome(approval), async () => {
        const [request, answer] = await redis.hmget(keys.unknownOutcome(approval), "request", "answer");
        const r = parse(request);
        return r ? { request: r, answered: answer ? (JSON.parse(answer) as UnknownOutcomeAnswer) : null } : null;
      }),
    answer: (approval, a, leave) =>
      unknownOutcomeAnswer.run(redis, keys, { approval, answer: a, leave }),
    done: (approval) => guarded(`taking unknown outcome ${approval} out of those waiting`, keys.unknownOutcomes(), async () => void (await redis.zrem(keys.unknownOutcomes(), approval))),
  };
}

/** The same in memory, for the test driver and unit tests. */
export function memoryUnknownOutcomeStore(): UnknownOutcomeStore & { kept: Map<string, { request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }> } {
  const kept = new Map<string, { request: UnknownOutcomeRequest; answered: UnknownOutcomeAnswer | null }>();
  const index = new Set<string>();
  const open = () => [...kept.values()].filter((x) => x.answered === null && index.has(x.request.approval)).map((x) => x.request).sort((a, b) => a.deadline - b.deadline);
  return {
    kept,
    put: (r) => {
      if (!kept.has(r.approval)) {
        kept.set(r.approval, { request: r, answered: null });
        index.add(r.approval);
      }
      return Promise.resolve();
    },
    waiting: () => Promise.resolve(open()),
    due: (now, limit) =>
      Promise.resolve(
        [...kept.values()]
          .filter((x) => index.has(x.request.approval) && x.request.deadline <= now)
          .sort((a, b) => a.request.deadline - b.request.deadline)
          .slice(0, limit)
          .map((x) => ({ ...x })),
      ),
    get: (approval) => Promise.resolve(kept.get(approval) ?? null),
    answer: (approval, a, leave) => {
      const x = kept.get(approval);
      if (!x) return Promise.resolve(null);
      if (leave) index.delete(approval);
      if (!x.answered) x.answered = a;
      return Promise.resolve(x.answered);
    },
    done: (approval) => Promise.resolve(void index.delete(approval)),
  };
}
