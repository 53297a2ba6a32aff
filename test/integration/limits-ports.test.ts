/**
 * The limits' two smaller ports in the real Redis (processors/limits/redis-store.ts): a job's
 * standing in its tree's limits hash (HMGET, the script jobEnding) and the unknown outcomes
 * waiting for a person (LIM-11, the scripts unknownOutcomePut and unknownOutcomeAnswer), held
 * to the same suites as the memory stores (test/unit/limits/memory-store.test.ts). Each test
 * has keys of its own prefix, so the index of those waiting holds only its own.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { redisStandingStore, redisUnknownOutcomeStore } from "../../processors/limits/redis-store.ts";
import { redisClient, type RedisClient } from "../../store/redis/client.ts";
import { Keys } from "../../store/redis/keys.ts";
import { scanKeys } from "../../store/redis/slots.ts";
import { uid } from "../support/events.ts";
import { endpoints } from "../support/kafka.ts";
import { standingStoreBehaviour, unknownOutcomeStoreBehaviour } from "../support/limits-ports.ts";

describe("the limits' smaller ports in the real Redis", () => {
  let redis: RedisClient;
  const root = uid("ports").replace(/-/g, "_");
  let n = 0;
  const fresh = () => new Keys(`${root}_${n++}`);
  beforeAll(() => {
    redis = redisClient(endpoints());
  });
  afterAll(async () => {
    const found: string[] = [];
    for await (const batch of scanKeys(redis, `${root}_*`)) found.push(...batch);
    if (found.length > 0) await Promise.all(found.map((k) => redis.del(k)));
    redis?.disconnect();
  });

  describe("redisStandingStore: jobs' standings", () => {
    standingStoreBehaviour(() => {
      const keys = fresh();
      return {
        store: redisStandingStore(redis, keys),
        seed: async (tenant, tree, fields) => void (await redis.hset(keys.limits(tenant, tree), fields)),
      };
    });
  });

  describe("redisUnknownOutcomeStore: LIM-11 unknown outcomes", () => {
    unknownOutcomeStoreBehaviour(() => redisUnknownOutcomeStore(redis, fresh()));
  });
});
